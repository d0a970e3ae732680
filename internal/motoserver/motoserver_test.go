package motoserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestStartResetClose(t *testing.T) {
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err) // never a skip: CI must have moto
	}
	if err := s.Reset(); err != nil {
		t.Error(err)
	}
	s.Close()
	if _, err := http.Get(s.URL + "/moto-api/"); err == nil {
		t.Error("server still answers after Close")
	}
}

// started starts a server for the test, stopped when it ends, and returns
// the configuration of clients that call it.
func started(t *testing.T) (context.Context, aws.Config) {
	t.Helper()
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")),
		config.WithBaseEndpoint(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	return ctx, cfg
}

// werkzeug's line per request is written when the output is kept, and
// only then: a server whose output is discarded serves as well without it.
func TestAccessLogOnlyWhenKept(t *testing.T) {
	for _, accessLog := range []bool{true, false} {
		t.Run(fmt.Sprint("access log ", accessLog), func(t *testing.T) {
			var out bytes.Buffer
			s, err := startOn("127.0.0.1", &out, accessLog)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Reset()
			s.Close() // the output is whole once the server has exited
			if err != nil {
				t.Fatal(err)
			}
			if logged := strings.Contains(out.String(), `"POST /moto-api/reset HTTP/1.1" 200`); logged != accessLog {
				t.Errorf("reset logged %v, want %v; output:\n%s", logged, accessLog, out.String())
			}
		})
	}
}

// parentEnv makes the test binary the parent of TestServerEndsWithItsParent.
const parentEnv = "MOTOSERVER_TEST_PARENT"

// A server ends with the process that started it, however that process
// ends: here it is killed (as go test's timeout kills a test binary), and
// Close never runs. The parent is this test binary run again, which starts
// a server, says its URL and pid, and waits.
func TestServerEndsWithItsParent(t *testing.T) {
	if os.Getenv(parentEnv) == "1" {
		s, err := Start(nil)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(s.URL, s.Pid())
		select {}
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestServerEndsWithItsParent$")
	parent.Env = append(os.Environ(), parentEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var url string
	var pid int
	if _, err := fmt.Fscan(bufio.NewReader(out), &url, &pid); err != nil || !strings.HasPrefix(url, "http://") {
		parent.Process.Kill()
		t.Fatalf("the parent said %q %d: %v", url, pid, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // if it outlived its parent
	parent.Process.Kill()
	parent.Wait()

	// A bound for the failure, not a timing: the server reads the end of
	// its input at once.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := http.Get(url + "/moto-api/")
		if err != nil && !running(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server (pid %d) still runs 30 s after its parent was killed", pid)
		}
	}
}

// running says whether the process exists and is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
