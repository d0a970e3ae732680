package node

import (
	"context"
	"errors"
	"regexp"
	"time"
)

const noticeDir = "notices"

// notice is a message of the core's queue being handled, kept on disk so
// that a restart resumes it from where it stood.
type notice struct {
	ID      string    `json:"id"`
	Receipt string    `json:"receipt"`
	Body    string    `json:"body"`
	Sent    time.Time `json:"sent"` // by the queue's clock
	// Sender is who sent it, as the queue recorded it.
	Sender string `json:"sender,omitempty"`
	// Nodes are the swarm nodes of the terminating instance and Services
	// those with tasks on them, found the first time (before the drain
	// moves them); Since is when. Nodes nil: not yet.
	Nodes    []string  `json:"nodes"`
	Services []string  `json:"services"`
	Since    time.Time `json:"since"`
}

var unsafeID = regexp.MustCompile(`[^-a-zA-Z0-9]`)

// inbox keeps the messages of the core's queue on disk while they are
// handled, and deletes them once they are: what every part that handles
// a message shares.
type inbox struct {
	Queue Queue
	State State
	Log   Logger
	// Visibility is how long a message is hidden while handled.
	Visibility time.Duration
}

// receive waits up to wait for messages on the queue and keeps each on
// disk, where housekeeping handles them in turn. One received again (its
// handling failed for longer than it stays hidden) keeps what was found
// and since when, so that the drain's bound does not start over; only the
// receipt is new.
func (in *inbox) receive(ctx context.Context, wait time.Duration) error {
	msgs, err := in.Queue.Receive(ctx, wait, in.Visibility)
	if err != nil {
		return err
	}
	for _, msg := range msgs {
		file := noticeDir + "/" + unsafeID.ReplaceAllString(msg.ID, "") + ".json"
		var n notice
		ok, err := in.State.Load(file, &n)
		if err != nil {
			return err
		}
		if !ok {
			n = notice{ID: msg.ID, Body: msg.Body, Sent: msg.Sent, Sender: msg.Sender}
		}
		n.Receipt = msg.Receipt
		if err := in.State.Save(file, n); err != nil {
			return err
		}
	}
	return nil
}

// kept are the files of the notices kept, oldest message first.
func (in *inbox) kept() ([]string, error) { return in.State.List(noticeDir) }

// load reads the notice kept in file; ok false when there is none, or
// when it is unreadable (then dropped, and logged).
func (in *inbox) load(file string) (n notice, ok bool, err error) {
	ok, err = in.State.Load(file, &n)
	if err != nil {
		in.Log("dropping an unreadable notice %s: %v", file, err)
		return n, false, in.State.Remove(file)
	}
	return n, ok, nil
}

// forget deletes a handled notice from the queue and from disk.
func (in *inbox) forget(ctx context.Context, file string, n notice) error {
	if err := in.Queue.Delete(ctx, n.Receipt); err != nil {
		in.Log("the notice was handled but is no longer on the queue: %v", err)
	}
	return in.State.Remove(file)
}

// eachNode calls f with each node of ids the swarm still has.
func eachNode(ctx context.Context, e Engine, ids []string, f func(Node) error) error {
	for _, id := range ids {
		node, err := e.Node(ctx, id)
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if err := f(node); err != nil {
			return err
		}
	}
	return nil
}
