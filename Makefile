# slidelimit — the two commands a newcomer runs are `make compare` and `make test`.
# Tools are pinned and run with `go run`, so a fresh machine needs only Go.

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHSTAT   := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
# Fuzz budgets are execution counts, not durations: on Go 1.26 a duration
# -fuzztime can fail spuriously with "context deadline exceeded" when the
# machine is starved (golang/go#75804); a count cannot.
FUZZEXECS   ?= 50000
LONGFUZZ    ?= 5000000
PKGS        := ./...

.PHONY: test lint unit outside race386 redis-server redis fuzz-short fuzz bench compare

## test: every check CI runs (format, vet, staticcheck, race tests, the
## outside-view concurrency tests at GOMAXPROCS 2 and 8, 32-bit build and, where
## the kernel can run it, 32-bit tests, the Redis module on real servers, short fuzz).
test: lint unit outside race386 redis fuzz-short

lint:
	@echo "== gofmt ($$(date -u +%T))"; out="$$(gofmt -l . )"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@echo "== go vet ($$(date -u +%T))"; go vet $(PKGS)
	@echo "== staticcheck ($$(date -u +%T))"; go run $(STATICCHECK) $(PKGS)
	@if [ -f bench/go.mod ]; then echo "== bench module: vet + staticcheck ($$(date -u +%T))"; cd bench && go vet ./... && go run $(STATICCHECK) ./...; fi
	@echo "== redis module: vet + staticcheck ($$(date -u +%T))"; cd redis && go vet ./... && go run $(STATICCHECK) ./...

unit:
	@echo "== go test -race -shuffle=on ($$(date -u +%T))"
	go test -race -shuffle=on -count=1 $(PKGS)
	@echo "== allocation checks without -race (the race detector makes allocation counts meaningless) ($$(date -u +%T))"
	go test -count=1 -run 'Alloc|^TestConformance' $(PKGS)
	@echo "== hook tests: races a few loads wide, made to happen every time (build tag slidelimit_hooks) ($$(date -u +%T))"
	go test -race -tags slidelimit_hooks -count=1 -run '^TestHook' ./internal/slidelog ./multi
	@if [ -f bench/go.mod ]; then echo "== bench module tests (race, one iteration of each benchmark) ($$(date -u +%T))"; \
		cd bench && go test -race -count=1 -run . -bench . -benchtime=1x ./...; fi

# The 32-bit step always vets and compiles every package and test binary for
# 386 (that catches 64-bit-only constants and sizes), and runs the tests only
# where this kernel can execute a 386 binary: it builds and runs a tiny one to
# find out, and says plainly when the tests were compiled but not run.
# The tests named TestOutside check guarantees only from what callers see
# (their instants and answers) under real concurrency; a rare interleaving
# must not slip through, so they run several times at 2 and 8 Ps.
OUTSIDECOUNT ?= 5
outside:
	@echo "== outside-view concurrency tests: -race -count $(OUTSIDECOUNT) -cpu 2,8 ($$(date -u +%T))"
	go test -race -run '^TestOutside' -count=$(OUTSIDECOUNT) -cpu=2,8 $(PKGS)

race386:
	@echo "== GOARCH=386: go vet and compile every test binary ($$(date -u +%T))"
	GOARCH=386 go vet $(PKGS)
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	GOARCH=386 go test -c -o "$$tmp/" $(PKGS) || exit 1; \
	printf 'package main\n\nfunc main() {}\n' > "$$tmp/probe.go"; \
	GOARCH=386 go build -o "$$tmp/probe386" "$$tmp/probe.go" || exit 1; \
	if why="$$("$$tmp/probe386" 2>&1)"; then \
		echo "== GOARCH=386: go test ($$(date -u +%T))"; GOARCH=386 go test -count=1 $(PKGS); \
	else \
		echo "== GOARCH=386: tests compiled but NOT RUN: this kernel cannot execute 32-bit binaries ($$(echo $$why | head -c 200)) ($$(date -u +%T))"; \
	fi

# The Redis tests start their own redis-server processes (standalone and a
# three-master cluster) on loopback ports. Install the server when missing;
# with CI=true a test that cannot find it fails instead of skipping.
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then \
		echo "== installing redis-server and redis-tools with apt-get (needed by the redis module's tests) ($$(date -u +%T))"; \
		if [ "$$(id -u)" != 0 ]; then echo "not root: install redis-server and redis-tools yourself"; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null || exit 1; \
	fi; echo "== $$(redis-server --version | cut -d' ' -f1-3) ($$(date -u +%T))"

# REDIS_SERIAL names the Redis tests that replay calls one at a time and
# compare each answer with a model: the shared suite (TestConformance, and on
# the autopipeliner) and the bench workloads. They run without -race: the
# detector has no concurrency to watch there but go-redis's own goroutines,
# which the module's concurrent tests exercise under it, and it makes them
# four to five times slower (about 130 s of the module's 280 s under -race).
REDIS_SERIAL = ^(TestConformance|TestBenchWorkloads|TestAutoPipeline)$$/^(log|window|cluster-log|exact=(true|false)|conformance-log|conformance-window)$$
redis: redis-server
	@echo "== redis module: go test -race against real servers, all but the one-call-at-a-time replays ($$(date -u +%T))"
	cd redis && go test -race -shuffle=on -count=1 -skip '$(REDIS_SERIAL)' ./...
	@echo "== redis module: the one-call-at-a-time replays, without -race ($$(date -u +%T))"
	cd redis && go test -shuffle=on -count=1 -run '$(REDIS_SERIAL)' ./...

# Every Fuzz target of this module (fuzz/ and any package with its own, such as
# httplimit's header parser) for a short bounded run (FUZZEXECS executions
# each, a few seconds to about 20 s on 2 cores).
FUZZPKGS = $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v -e '^./bench/' -e '^./redis/' | xargs -n1 dirname | sort -u)
fuzz-short:
	@for p in $(FUZZPKGS); do \
		for t in $$(go test -list '^Fuzz' $$p | grep '^Fuzz'); do \
			echo "== fuzz $$p $$t ($(FUZZEXECS) executions) ($$(date -u +%T))"; \
			go test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZEXECS)x -fuzzminimizetime=200x $$p || exit 1; \
		done; \
	done

## fuzz: the same targets for longer (LONGFUZZ executions each).
fuzz:
	$(MAKE) fuzz-short FUZZEXECS=$(LONGFUZZ)

## bench: the full set, -count 10, benchstat: the library's own benchmarks
## (each package against its mutex twin and the floor), then the peer
## comparison of bench/ (tables in bench/out/full/, plots in docs/img/).
bench:
	@mkdir -p docs/results
	go test -run='^$$' -bench=. -benchmem -count=10 -cpu=1,2,8 ./... | tee docs/results/lib-bench.txt
	go run $(BENCHSTAT) docs/results/lib-bench.txt
	cd bench && ./compare.sh -full && ./compare.sh -publish

## compare: accuracy and speed side by side with the peers (see bench/).
compare:
	@if [ -x bench/compare.sh ]; then cd bench && ./compare.sh; \
	else echo "bench/ not present yet: running the library's own benchmarks once"; \
		go test -run='^$$' -bench=. -benchmem -count=1 ./...; fi
