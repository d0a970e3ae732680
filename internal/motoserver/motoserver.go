// Package motoserver runs a local moto_server (a fake AWS endpoint) for the
// end-to-end tests, the real-engine tests and the benchmarks: on a free
// loopback port, answering when Start returns, stopped by Close.
package motoserver

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// ErrNotInstalled says how to get moto_server.
var ErrNotInstalled = errors.New("moto_server not found on PATH: install it with pip install 'moto[server]'")

// gaps is the Python program that runs moto_server with the gaps of
// moto's CloudFormation that our templates meet filled in.
//
//go:embed gaps.py
var gaps string

// Server is a running moto_server.
type Server struct {
	URL      string
	cmd      *exec.Cmd
	exited   chan struct{} // closed once the process has exited
	lifeline *os.File      // the server's standard input, held open while it may run
}

// start runs a server process, its output going to log, its standard
// input read from stdin when not nil; exited is closed when it exits.
func start(log io.Writer, stdin *os.File, name string, args ...string) (*exec.Cmd, chan struct{}, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	return cmd, exited, nil
}

// startWithin bounds a server's start: a couple of seconds alone, longer
// when several start at once (the end-to-end tests' pool) on a busy
// machine, whose imports then share the cores.
const startWithin = 2 * time.Minute

// Start runs moto_server on a free loopback port, its output going to log,
// and waits up to startWithin for it to answer. A nil log discards the
// output, and the server then writes no access log (a line per request
// that nobody reads, a few percent of its CPU).
func Start(log io.Writer) (*Server, error) { return StartOn("127.0.0.1", log) }

// StartOn is Start on a free port of the local address host, for clients
// that cannot reach the loopback interface (nodes in their own network
// namespaces).
func StartOn(host string, log io.Writer) (*Server, error) { return startOn(host, log, log != nil) }

// startOn is StartOn, with werkzeug's line per request in log or not.
func startOn(host string, log io.Writer, accessLog bool) (*Server, error) {
	path, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, ErrNotInstalled
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("finding a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := []string{"-H", host, "-p", fmt.Sprint(port)}
	// moto's own Python, when python3 is it, runs moto_server with the gaps
	// its CloudFormation has for our templates filled in (gaps.py); a
	// python3 without moto exits at once, and moto_server runs as it is.
	//
	// Its standard input is a pipe whose other end only this process
	// holds (--exit-with-stdin): the server ends when it reads the end of
	// it, that is when Close closes it or when this process ends, however
	// it ends. A test binary killed by go test's timeout leaves no server
	// behind, listening and holding its memory.
	gapsArgs := []string{"-c", gaps, "--exit-with-stdin"}
	if !accessLog {
		gapsArgs = append(gapsArgs, "--no-access-log")
	}
	in, lifeline, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting moto_server: %w", err)
	}
	cmd, exited, err := start(log, in, "python3", append(gapsArgs, args...)...)
	in.Close() // the server's copy is all that is needed
	if err == nil {
		select {
		case <-exited:
			err = errors.New("python3 cannot run moto")
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		lifeline.Close()
		lifeline = nil
		if cmd, exited, err = start(log, nil, path, args...); err != nil {
			return nil, fmt.Errorf("starting moto_server: %w", err)
		}
	}
	s := &Server{URL: "http://" + net.JoinHostPort(host, fmt.Sprint(port)), cmd: cmd, exited: exited, lifeline: lifeline}
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(startWithin); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			s.Close()
			return nil, fmt.Errorf("moto_server exited before it answered on %s", s.URL)
		default:
		}
		resp, err := client.Get(s.URL + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return s, nil
		}
	}
	s.Close()
	return nil, fmt.Errorf("moto_server did not answer on %s within %v", s.URL, startWithin)
}

// Reset forgets every resource, as if the account were new.
func (s *Server) Reset() error {
	resp, err := http.Post(s.URL+"/moto-api/reset", "application/json", nil)
	if err != nil {
		return fmt.Errorf("resetting moto: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("resetting moto: %s", resp.Status)
	}
	return nil
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Close stops the server.
func (s *Server) Close() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.exited
	}
	if s.lifeline != nil {
		s.lifeline.Close()
	}
}
