# clusterctl: `make demo` runs the lifecycle against a local moto server,
# `make moto` starts that local AWS for you to use, `make test` runs
# everything CI runs.

GO      ?= go
VERSION ?= $(shell ./scripts/version.sh 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# Every go command here, and those the tests run, builds as the release does
# (no cgo, trimmed paths: scripts/release.sh), so a package is compiled once
# for vet, the tests, the binary and the agents: on a cold build cache, as
# CI's is, each other combination compiled the SDK's clients again.
CGO_ENABLED ?= 0
GOFLAGS += -trimpath
export CGO_ENABLED GOFLAGS
SCRIPTS := $(shell git ls-files '*.sh' 2>/dev/null) .ci/run

.PHONY: build agents release demo moto test lint unit e2e golden bench clean

# The node agents for linux/amd64 and linux/arm64 (reproducible builds
# stamped with VERSION, gzip-compressed with their SHA-256), then clusterctl
# embedding them: the binary to release.
build: agents
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/clusterctl ./cmd/clusterctl

agents:
	$(GO) run ./internal/agentbin/mkdist -version '$(VERSION)' -o internal/agentbin/dist

# The release: clusterctl for linux and darwin on amd64 and arm64, each
# embedding the agents, and SHA256SUMS, into dist/; reproducible from the
# commit (see scripts/release.sh).
release:
	./scripts/release.sh

demo: build
	./scripts/demo.sh

# The demo's and the tests' local AWS, until Ctrl-C: moto with its gaps
# filled and a default VPC with an internet gateway. MOTO_PORT picks the port.
moto:
	./scripts/moto.sh $(MOTO_PORT)

# Everything CI runs: formatting, vet, shell scripts, then every test
# (templates through cfn-lint, scripts through shellcheck, end to end on moto).
# TEST_PACKAGES packages at a time, not go test's one per core: e2e and the
# real-engine scenarios take most of the run mostly waiting, and the other
# packages would otherwise queue behind them (docs/benchmarks.md, "CI's time").
# No vet in go test: lint has run go vet ./... (a superset) already.
TEST_PACKAGES ?= 4
test: lint
	$(GO) test -count=1 -vet=off -p $(TEST_PACKAGES) -timeout 30m ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags bench ./internal/bootstrap/
	shellcheck $(SCRIPTS)

unit:
	$(GO) test -count=1 -timeout 30m $$($(GO) list ./... | grep -v /e2e)

e2e:
	$(GO) test -count=1 ./e2e/

# Benchmarks against the aws CLI + jq way and the API floor, on a local
# moto server, then the node programs on real engines (not part of test or
# CI): see docs/benchmarks.md.
bench: build
	$(GO) run ./bench -bin bin/clusterctl
	$(MAKE) bench-nodes

# The node agent's CPU per housekeeping round and its memory on real
# engines, against the shell programs' (needs root, like the real-engine
# tests; the file is built only with -tags bench). CLUSTERCTL_BENCH_ROUNDS,
# _REPS and _SETTLE change the rounds, repetitions and the wait before.
.PHONY: bench-nodes
bench-nodes:
	$(GO) test -tags bench -count=1 -timeout 60m -run '^TestBenchNodePrograms$$' -v ./internal/bootstrap/

.PHONY: bench-large
bench-large: build
	$(GO) run ./bench -bin bin/clusterctl -large -reps 3 -add-reps 3 -wait-reps 3 -cli-wait-reps 1

# The autoscaler's reaction on real engines (root, docker.io, busybox-static,
# moto_server: see internal/bootstrap): from a task becoming pending to the
# leader's desired-capacity call, against the goal of 30 s. About 5 minutes.
.PHONY: bench-autoscale
bench-autoscale:
	@out=$$(mktemp); $(GO) test -count=1 -run 'TestAutoscale$$' -v -timeout 20m ./internal/bootstrap/ >$$out 2>&1; rc=$$?; \
	grep -E 'desired-capacity call|^(--- |ok|FAIL)' $$out; [ $$rc -eq 0 ] || tail -n 60 $$out; rm -f $$out; exit $$rc

# Rewrite the golden templates after an intended template change.
golden:
	$(GO) test ./internal/render/ -update

clean:
	rm -rf bin dist internal/agentbin/dist/clusterctl-node-*
