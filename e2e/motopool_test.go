package e2e

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/testlanes"
)

// The tests run the binary against moto, and each starts from an empty
// account (resetMoto): two tests cannot share a server at the same time.
// One moto_server is a Python process that serves on one core at most, and
// a test mostly waits on it or on the binary, so the tests that call
// parallel run side by side, each on a server of its own taken from a
// pool, as many at once as the pool has servers. The others run first, one
// after another, on the default server (endpoint), which no parallel test
// uses.
//
// poolEnv sets the pool's size (defaultPool when unset).
const (
	poolEnv     = "CLUSTERCTL_E2E_MOTOS"
	defaultPool = 3
)

// longestFirst are the tests that take longest, longest first, as
// measured (docs/benchmarks.md, "The longest first, measured"; go test -v
// logs each test's own time on its server): they start first, so that the
// run does not end with one of them alone. It orders, nothing more.
var longestFirst = []string{
	"TestLifecycleUnderFaults",
	"TestReadmeExamples",
	"TestFlaglessUpdateCoreKeepsEverySetting",
	"TestUpgradeResumesAfterAFailedValidation",
	"TestRenderTakesEveryFlag",
	"TestUpdateCore",
	"TestDemo",
	"TestEndpointGoesSilentDuringAWait",
	"TestFlaglessUpdateKeepsEverySetting",
	"TestRestoreCommand",
	"TestDrainNode",
	"TestGroupDeployedByHand",
	"TestBackupCommands",
}

// motoPool is the default server and the pool, with the server each
// running parallel test holds, by its name.
type motoPool struct {
	def  *motoserver.Server
	all  []*motoserver.Server
	free chan *motoserver.Server
	// gate lets in as many parallel tests as the pool has servers.
	gate *testlanes.Gate

	mu   sync.Mutex
	held map[string]*motoserver.Server
}

// poolSize reads the pool's size from the environment.
func poolSize() (int, error) { return testlanes.Lanes(poolEnv, defaultPool) }

// startMotos starts the default server and size more for the pool, at
// once (each takes a second or two to answer). Their output is not kept:
// no test reads it, and an access log line per request would cost the
// servers CPU for nothing.
func startMotos(size int) (*motoPool, error) {
	type started struct {
		s   *motoserver.Server
		err error
	}
	ch := make(chan started, size+1)
	for range size + 1 {
		go func() {
			s, err := motoserver.Start(nil)
			ch <- started{s, err}
		}()
	}
	p := &motoPool{free: make(chan *motoserver.Server, size), held: map[string]*motoserver.Server{}}
	var errs []error
	for range size + 1 {
		r := <-ch
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		p.all = append(p.all, r.s)
		if p.def == nil {
			p.def = r.s
		} else {
			p.free <- r.s
		}
	}
	if err := errors.Join(errs...); err != nil {
		p.close()
		return nil, err
	}
	var err error
	if p.gate, err = testlanes.New(size, longestFirst); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *motoPool) close() {
	for _, s := range p.all {
		s.Close()
	}
}

// of returns the server of test t (or of the test it is a subtest of):
// the one it holds when it runs in parallel, else the default one.
func (p *motoPool) of(t *testing.T) *motoserver.Server {
	name, _, _ := strings.Cut(t.Name(), "/")
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.held[name]; s != nil {
		return s
	}
	return p.def
}

// endpointOf is the URL of test t's moto server.
func endpointOf(t *testing.T) string { return motos.of(t).URL }

// parallel runs the top-level test t in parallel with the other tests
// that call it, on a moto server of its own, emptied, for its duration.
// Call it first.
func parallel(t *testing.T) {
	t.Helper()
	motos.gate.Enter(t)
	s := <-motos.free
	motos.mu.Lock()
	motos.held[t.Name()] = s
	motos.mu.Unlock()
	t.Cleanup(func() {
		motos.mu.Lock()
		delete(motos.held, t.Name())
		motos.mu.Unlock()
		motos.free <- s
	})
	// What the test before left: each starts from an empty account, as
	// when the tests ran one after another and each reset.
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
}
