package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/clusterctl/clusterctl/internal/motoserver"
)

// moto is the moto_server this benchmark runs, with its request log.
type moto struct {
	*motoserver.Server
	logPath string

	mu      sync.Mutex
	off     int64  // bytes of the log already counted
	partial []byte // an incomplete last line
	total   int    // request lines counted so far
}

// requestLine is werkzeug's access log line, one per request served:
// 127.0.0.1 - - [date] "POST / HTTP/1.1" 200 -
var requestLine = regexp.MustCompile(`"[A-Z]+ \S+ HTTP/1\.[01]" \d{3} `)

func startMoto(dir string) (*moto, error) {
	m := &moto{logPath: filepath.Join(dir, "moto.log")}
	log, err := os.Create(m.logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the server holds its own descriptor
	if m.Server, err = motoserver.Start(log); err != nil {
		return nil, err
	}
	return m, m.Reset()
}

func (m *moto) stop() {
	if m != nil && m.Server != nil {
		m.Close()
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
