// Package ssmfake plays what moto does not model of Systems Manager, for
// tests: a Run Command invocation runs until whoever plays the SSM agent
// says how it ended (moto reports every command a success at once, exit
// code 0), and CancelCommand reaches that agent; StartSession answers as
// Session Manager does (moto has no sessions). It stands in front of
// moto as an http.Handler: SendCommand goes on to moto, which records the
// command (tests check it there with the SDK); GetCommandInvocation and
// CancelCommand are answered here; every other call goes on.
package ssmfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Command is one command sent to one instance.
type Command struct {
	ID         string
	Instance   string
	Document   string
	Bucket     string
	Prefix     string
	Parameters map[string][]string
	// Cancelled is closed when CancelCommand names the command.
	Cancelled chan struct{}

	status string // Pending, InProgress, Success, Failed, Cancelled
	code   int
}

// RunCommand is the handler.
type RunCommand struct {
	next http.Handler

	mu         sync.Mutex
	commands   map[string]*Command // by id and instance
	sent       chan *Command
	all        []*Command
	sessions   []string // the targets of the sessions started, in order
	terminated []string // the sessions terminated
}

// Sessions lists the targets of the sessions started so far.
func (f *RunCommand) Sessions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sessions...)
}

// New returns the handler, passing what it does not answer to next.
func New(next http.Handler) *RunCommand {
	return &RunCommand{next: next, commands: map[string]*Command{}, sent: make(chan *Command, 64)}
}

// Sent delivers each command as it is sent, once per instance: the agent's
// side (the first 64 not taken wait; later ones are only in Commands).
func (f *RunCommand) Sent() <-chan *Command { return f.sent }

// Commands lists every command sent so far.
func (f *RunCommand) Commands() []*Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Command(nil), f.all...)
}

// Start marks a command running on its instance, as the agent does when
// it takes it.
func (f *RunCommand) Start(c *Command) { f.set(c, "InProgress", -1) }

// Finish records how a command ended on its instance: Success for exit
// code 0, Failed otherwise.
func (f *RunCommand) Finish(c *Command, code int) {
	status := "Success"
	if code != 0 {
		status = "Failed"
	}
	f.set(c, status, code)
}

func (f *RunCommand) set(c *Command, status string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.status == "Cancelled" {
		return
	}
	c.status, c.code = status, code
}

func key(id, instance string) string { return id + "/" + instance }

func (f *RunCommand) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	if !strings.HasPrefix(target, "AmazonSSM.") {
		f.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		CommandId   string
		InstanceId  string
		InstanceIds []string
		Target      string
		SessionId   string
	}
	json.Unmarshal(body, &in)
	switch strings.TrimPrefix(target, "AmazonSSM.") {
	case "SendCommand":
		f.send(w, r, in.InstanceIds)
	case "GetCommandInvocation":
		f.mu.Lock()
		c := f.commands[key(in.CommandId, in.InstanceId)]
		var out map[string]any
		if c != nil {
			out = map[string]any{
				"CommandId": c.ID, "InstanceId": c.Instance, "DocumentName": c.Document, "PluginName": "aws:runShellScript",
				"Status": c.status, "StatusDetails": c.status, "ResponseCode": c.code,
				"StandardOutputContent": "", "StandardErrorContent": "",
			}
			if c.Bucket != "" {
				// As Systems Manager names them when output goes to a bucket.
				base := "https://s3.amazonaws.com/" + c.Bucket + "/" + c.Prefix + "/" + c.ID + "/" + c.Instance + "/awsrunShellScript/0.awsrunShellScript/"
				out["StandardOutputUrl"], out["StandardErrorUrl"] = base+"stdout", base+"stderr"
			}
		}
		f.mu.Unlock()
		if c == nil {
			writeError(w, "InvocationDoesNotExist", "no invocation of "+in.CommandId+" on "+in.InstanceId)
			return
		}
		writeJSON(w, out)
	case "StartSession":
		f.mu.Lock()
		f.sessions = append(f.sessions, in.Target)
		id := fmt.Sprintf("clusterctl-test-%d", len(f.sessions))
		f.mu.Unlock()
		writeJSON(w, map[string]any{"SessionId": id, "TokenValue": "token-" + id, "StreamUrl": "wss://ssmmessages.example/v1/data-channel/" + id})
	case "TerminateSession":
		f.mu.Lock()
		f.terminated = append(f.terminated, in.SessionId)
		f.mu.Unlock()
		writeJSON(w, map[string]any{"SessionId": in.SessionId})
	case "CancelCommand":
		f.mu.Lock()
		found := false
		for _, c := range f.all {
			if c.ID != in.CommandId || len(in.InstanceIds) > 0 && !contains(in.InstanceIds, c.Instance) {
				continue
			}
			found = true
			if c.status == "Pending" || c.status == "InProgress" {
				c.status, c.code = "Cancelled", -1
				close(c.Cancelled)
			}
		}
		f.mu.Unlock()
		if !found {
			writeError(w, "InvalidCommandId", "no command "+in.CommandId)
			return
		}
		writeJSON(w, map[string]any{})
	default:
		f.next.ServeHTTP(w, r)
	}
}

// send passes SendCommand on and records the command moto accepted, on
// the instances the request named (moto adds every instance of the
// account to a command sent without targets).
func (f *RunCommand) send(w http.ResponseWriter, r *http.Request, instances []string) {
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
	if rec.Code != http.StatusOK {
		return
	}
	var out struct {
		Command struct {
			CommandId          string
			DocumentName       string
			OutputS3BucketName string
			OutputS3KeyPrefix  string
			Parameters         map[string][]string
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		return
	}
	c := out.Command
	for _, i := range instances {
		cmd := &Command{ID: c.CommandId, Instance: i, Document: c.DocumentName, Bucket: c.OutputS3BucketName,
			Prefix: c.OutputS3KeyPrefix, Parameters: c.Parameters, Cancelled: make(chan struct{}), status: "Pending", code: -1}
		f.mu.Lock()
		f.commands[key(cmd.ID, i)] = cmd
		f.all = append(f.all, cmd)
		f.mu.Unlock()
		select {
		case f.sent <- cmd:
		default:
			// Nobody plays the agent: the command stays pending, as with
			// an agent that is offline; Commands still lists it.
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"__type":%q,"message":%q}`, code, msg)
}
