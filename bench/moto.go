package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// moto is a moto_server this benchmark started, with its request log.
type moto struct {
	url     string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}

	mu      sync.Mutex
	off     int64  // bytes of the log already counted
	partial []byte // an incomplete last line
	total   int    // request lines counted so far
}

// requestLine is werkzeug's access log line, one per request served:
// 127.0.0.1 - - [date] "POST / HTTP/1.1" 200 -
var requestLine = regexp.MustCompile(`"[A-Z]+ \S+ HTTP/1\.[01]" \d{3} `)

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startMoto(ctx context.Context, dir string) (*moto, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	m := &moto{url: fmt.Sprintf("http://127.0.0.1:%d", port), logPath: filepath.Join(dir, "moto.log"), done: make(chan struct{})}
	log, err := os.Create(m.logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	m.cmd = exec.Command("moto_server", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	m.cmd.Stdout, m.cmd.Stderr = log, log
	// Its own process group, so a Ctrl-C on the terminal reaches only us and
	// we stop it in order; Pdeathsig stops it if we die without cleaning up.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting moto_server: %w", err)
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(m.url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-m.done:
			return nil, fmt.Errorf("moto_server exited at start; its log is %s", m.logPath)
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.stop()
			return nil, errors.New("moto_server did not answer within 60s")
		}
	}
	return m, m.reset()
}

func (m *moto) reset() error {
	resp, err := http.Post(m.url+"/moto-api/reset", "application/json", nil)
	if err != nil {
		return fmt.Errorf("resetting moto: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("resetting moto: %s", resp.Status)
	}
	return nil
}

// stop ends the server: SIGTERM, then SIGKILL to its group after 3s.
func (m *moto) stop() {
	if m == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.done
	}
}

// requests returns the number of requests moto has logged so far. werkzeug
// writes a request's log line before it sends the response, so once a
// client has its answer the line is in the file.
func (m *moto) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := os.Open(m.logPath)
	if err != nil {
		return m.total
	}
	defer f.Close()
	if _, err := f.Seek(m.off, 0); err != nil {
		return m.total
	}
	buf := new(bytes.Buffer)
	n, _ := buf.ReadFrom(f)
	m.off += n
	data := append(m.partial, buf.Bytes()...)
	last := bytes.LastIndexByte(data, '\n')
	if last < 0 {
		m.partial = data
		return m.total
	}
	m.total += len(requestLine.FindAll(data[:last+1], -1))
	m.partial = append([]byte(nil), data[last+1:]...)
	return m.total
}
