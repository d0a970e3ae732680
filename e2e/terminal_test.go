package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal runs a process on a pseudo-terminal, as an operator's shell
// would: it is the process's controlling terminal, so typing Ctrl-C sends
// SIGINT and Ctrl-D ends the input, through the terminal's line discipline.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer  // everything the terminal showed
	seen int           // how much of out the expectations have passed over
	read chan struct{} // closed when the terminal has nothing more to show
	done chan struct{} // closed when the process has ended
	code int
}

// guard bounds every wait on a terminal: a process that hangs fails the test
// instead of hanging it. It is not a timing assertion.
const guard = 30 * time.Second

func startTerminal(t *testing.T, env []string, name string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(env, "TERM=dumb")
	cmd.Dir = t.TempDir()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatalf("starting %s on a terminal: %v", name, err)
	}
	term := &terminal{t: t, cmd: cmd, pty: f, read: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(term.read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			term.code = ee.ExitCode()
		}
		close(term.done)
	}()
	t.Cleanup(func() {
		select {
		case <-term.done:
		default:
			_ = cmd.Process.Kill()
			<-term.done
		}
		f.Close()
	})
	return term
}

// screen is what the terminal has shown so far.
func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// expect waits until the terminal shows want after what the previous
// expectation matched, so a later step is never satisfied by earlier output
// (or by the terminal's echo of a line typed ahead).
func (term *terminal) expect(want string) {
	term.t.Helper()
	deadline := time.Now().Add(guard)
	for {
		screen := term.screen()
		if i := strings.Index(screen[term.seen:], want); i >= 0 {
			term.seen += i + len(want)
			return
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the terminal never showed %q after byte %d; it shows:\n%s", want, term.seen, screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (term *terminal) typeText(s string) {
	term.t.Helper()
	if _, err := term.pty.WriteString(s); err != nil {
		term.t.Fatalf("typing %q: %v", s, err)
	}
}

// exit waits for the process to end and returns its exit code.
func (term *terminal) exit() int {
	term.t.Helper()
	for _, ch := range []chan struct{}{term.done, term.read} {
		select {
		case <-ch:
		case <-time.After(guard):
			term.t.Fatalf("the process did not end; the terminal shows:\n%s", term.screen())
		}
	}
	return term.code
}
