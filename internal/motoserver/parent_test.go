package motoserver_test

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/motoserver"
)

// parentEnv makes the test binary the parent of TestServerEndsWithItsParent.
const parentEnv = "MOTOSERVER_TEST_PARENT"

// A server ends with the process that started it, however that process
// ends: here it is killed (as go test's timeout kills a test binary), and
// Close never runs. The parent is this test binary run again, which starts
// a server, says its URL and pid, and waits.
func TestServerEndsWithItsParent(t *testing.T) {
	if os.Getenv(parentEnv) == "1" {
		s, err := motoserver.Start(nil)
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
		if err != nil && !enginetest.Alive(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server (pid %d) still runs 30 s after its parent was killed", pid)
		}
	}
}
