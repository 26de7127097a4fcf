# Lazaret. `make demo` builds bin/lazaret and runs both lanes on the
# embedded default; `make test` runs every test (each test binary starts its
# own redis-server on a free port; PostgreSQL on 5432, xmllint and the other
# tools docs/testing.md lists: .ci/run installs and starts what is missing).

GO        ?= go
FUZZTIME  ?= 10m
SOAKITEMS ?= 5000
BIN       := bin/lazaret
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COLDBUILD := about 6 minutes, 356 s measured with GOCACHE empty and other builds running,

.PHONY: all build install demo test unit lint fuzz fuzz-seeds fuzz-smoke soak bench generate clean test-inflate bench-inflate riverbench

all: lint test

# TAGS=zlib builds the strict Deflate count on the system zlib (cgo,
# zlib1g-dev) instead of the default build's wholeFlate (pure Go): the same
# verdicts, but about 0.8 times as fast per CPU second on noisy masters.
TAGS ?=
# TAGS=nodemo leaves the demo, and the in-process Redis it runs
# (miniredis), out of the binary: for production hosts.
build:
	$(GO) build -tags "$(TAGS)" -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/lazaret

# Into $(go env GOBIN), or $(go env GOPATH)/bin when GOBIN is unset.
install:
	$(GO) install -tags "$(TAGS)" -ldflags "-X main.version=$(VERSION)" ./cmd/lazaret

demo:
	@echo "make demo: building $(BIN) first. A cold build takes minutes ($(COLDBUILD) on 2 cores): it compiles"
	@echo "the pure-Go SQLite (modernc.org/sqlite, SQLite's C translated to Go), pgx, asynq and asynqmon's web UI;"
	@echo "later builds come from Go's build cache in seconds."
	@$(MAKE) --no-print-directory build
	$(BIN) demo

# The whole suite: unit and integration tests (real Redis, real SQLite, the
# official PREMIS schema, the shared corpus), the zlib build's tests, then
# short fuzz and fault smoke runs.
test: lint
	$(GO) test -count=1 ./...
	$(MAKE) test-inflate
	$(MAKE) fuzz-smoke
	$(MAKE) faults-smoke

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) build -tags nodemo -o /dev/null ./cmd/lazaret
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck ./...; else echo "staticcheck not installed: skipped (go install honnef.co/go/tools/cmd/staticcheck@latest)"; fi

# Every fuzz target (go test fuzzes one target at a time). The smoke run is
# bounded by execution count, not time: go1.26's fuzz coordinator can report
# a spurious "context deadline exceeded" when a duration expires
# (golang/go#75804, fixed in go1.27).
FUZZCOUNT ?= 40000x
fuzz-smoke:
	$(GO) test -run='^$$' -fuzz='^FuzzTIFF$$' -fuzztime=$(FUZZCOUNT) ./tiff
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZCOUNT) ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzRoundTrip$$' -fuzztime=$(FUZZCOUNT) ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzParseSegments$$' -fuzztime=20000x ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzParseManifest$$' -fuzztime=20000x ./validate
	$(GO) test -run='^$$' -fuzz='^FuzzReadICC$$' -fuzztime=20000x ./tiff
	$(GO) test -run='^$$' -fuzz='^FuzzRegistryFiles$$' -fuzztime=2000x ./validate
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeEnvelope$$' -fuzztime=20000x ./ingest
	$(GO) test -run='^$$' -fuzz='^FuzzTIFFDepth$$' -fuzztime=5000x ./tiff
	$(GO) test -run='^$$' -fuzz='^FuzzFastCountAsDecoder$$' -fuzztime=5000x ./tiff
	$(GO) test -run='^$$' -fuzz='^FuzzContrl$$' -fuzztime=5000x ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzAperak$$' -fuzztime=5000x ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzValidate$$' -fuzztime=5000x ./edifact/directory
	$(GO) test -run='^$$' -fuzz='^FuzzRules$$' -fuzztime=5000x ./validate
	$(GO) test -run='^$$' -fuzz='^FuzzMembers$$' -fuzztime=20000x ./premis/ledgersql
	$(GO) test -run='^$$' -fuzz='^FuzzSteps$$' -fuzztime=20000x ./premis/ledgersql
	$(GO) test -run='^$$' -fuzz='^FuzzStoredEnvelope$$' -fuzztime=20000x ./premis/ledgersql
	$(GO) test -run='^$$' -fuzz='^FuzzPacked$$' -fuzztime=20000x ./premis/ledgersql
	$(GO) test -run='^$$' -fuzz='^FuzzExport$$' -fuzztime=5000x ./premis
	$(GO) test -run='^$$' -fuzz='^FuzzReadCheckpoints$$' -fuzztime=20000x ./premis
	$(GO) test -run='^$$' -fuzz='^FuzzInspectJSON$$' -fuzztime=20000x ./cmd/lazaret
	$(GO) test -run='^$$' -fuzz='^FuzzTableWriter$$' -fuzztime=20000x ./cmd/lazaret

# Every target's committed seed corpus (testdata/fuzz/<Target>/) is the
# seeds Lazaret makes itself (fixtures, hand-written cases), written from
# each target's own seed list; inputs from ../shared/corpus are read at run
# time, never copied in.
FUZZPKGS := ./tiff ./validate ./edifact ./edifact/directory ./ingest ./premis ./premis/ledgersql ./cmd/lazaret
fuzz-seeds:
	LAZARET_WRITE_SEEDS=1 $(GO) test -count=1 -run='^Fuzz' $(FUZZPKGS)

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzTIFF$$' -fuzztime=$(FUZZTIME) ./tiff
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzRoundTrip$$' -fuzztime=$(FUZZTIME) ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzParseSegments$$' -fuzztime=$(FUZZTIME) ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzParseManifest$$' -fuzztime=$(FUZZTIME) ./validate
	$(GO) test -run='^$$' -fuzz='^FuzzReadICC$$' -fuzztime=$(FUZZTIME) ./tiff
	$(GO) test -run='^$$' -fuzz='^FuzzRegistryFiles$$' -fuzztime=$(FUZZTIME) ./validate
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeEnvelope$$' -fuzztime=$(FUZZTIME) ./ingest
	$(GO) test -run='^$$' -fuzz='^FuzzTIFFDepth$$' -fuzztime=$(FUZZTIME) ./tiff
	$(GO) test -run='^$$' -fuzz='^FuzzFastCountAsDecoder$$' -fuzztime=$(FUZZTIME) ./tiff
	$(GO) test -run='^$$' -fuzz='^FuzzContrl$$' -fuzztime=$(FUZZTIME) ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzAperak$$' -fuzztime=$(FUZZTIME) ./edifact
	$(GO) test -run='^$$' -fuzz='^FuzzValidate$$' -fuzztime=$(FUZZTIME) ./edifact/directory
	$(GO) test -run='^$$' -fuzz='^FuzzRules$$' -fuzztime=$(FUZZTIME) ./validate
	$(GO) test -run='^$$' -fuzz='^FuzzMembers$$' -fuzztime=$(FUZZTIME) ./premis/ledgersql
	$(GO) test -run='^$$' -fuzz='^FuzzSteps$$' -fuzztime=$(FUZZTIME) ./premis/ledgersql
	$(GO) test -run='^$$' -fuzz='^FuzzStoredEnvelope$$' -fuzztime=$(FUZZTIME) ./premis/ledgersql
	$(GO) test -run='^$$' -fuzz='^FuzzExport$$' -fuzztime=$(FUZZTIME) ./premis
	$(GO) test -run='^$$' -fuzz='^FuzzReadCheckpoints$$' -fuzztime=$(FUZZTIME) ./premis
	$(GO) test -run='^$$' -fuzz='^FuzzInspectJSON$$' -fuzztime=$(FUZZTIME) ./cmd/lazaret
	$(GO) test -run='^$$' -fuzz='^FuzzTableWriter$$' -fuzztime=$(FUZZTIME) ./cmd/lazaret
	$(GO) test -run='^$$' -fuzz='^FuzzInflateBackends$$' -fuzztime=$(FUZZTIME) -tags zlib ./tiff

soak:
	LAZARET_SOAK_ITEMS=$(SOAKITEMS) $(GO) test -count=1 -run='^TestSoak$$' -v ./ingest

# Every benchmark; then the noisy 8000x6000 TIFF master read three ways in
# each iteration (CheckMaster, libtiff's tiffinfo -D, a plain SHA-256) at
# one and two cores, CheckMaster's throughput printed as a multiple of the
# others' (x-tiffinfo, x-sha256); then the 4 KB and 64 KB masters long
# enough for steady allocs/op.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=5x ./validate ./edifact
	$(GO) test -run='^$$' -bench='^BenchmarkNoisyVsAnchors$$' -benchtime=5x -cpu=1,2 ./validate
	$(GO) test -run='^$$' -bench='^BenchmarkSmall$$' -benchmem -benchtime=2000x ./validate

# River's no-op drain, the anchor of lazaret bench's pipeline rows: a
# module of its own in ../shared/tools/riverbench, so that River is no
# dependency of Lazaret's. Then: lazaret bench --river bin/riverbench.
RIVERBENCH ?= ../shared/tools/riverbench
riverbench:
	cd $(RIVERBENCH) && $(GO) build -o $(CURDIR)/bin/riverbench .

# The C inflater of the strict count (cgo; Debian zlib1g-dev): the packages
# that inflate with it, then the fuzz targets that hold it to the default
# build's verdicts.
INFLATETAGS ?= zlib
test-inflate:
	for t in $(INFLATETAGS); do \
		$(GO) vet -tags $$t ./tiff ./validate ./cmd/lazaret && \
		$(GO) test -count=1 -tags $$t ./tiff ./validate ./cmd/lazaret && \
		$(GO) test -run='^$$' -fuzz='^FuzzInflateBackends$$' -fuzztime=5000x -tags $$t ./tiff && \
		$(GO) test -run='^$$' -fuzz='^FuzzFastCountAsDecoder$$' -fuzztime=5000x -tags $$t ./tiff || exit 1; \
	done

# The noisy Deflate master against tiffinfo -D in each build, one and two cores.
bench-inflate:
	for t in "" $(INFLATETAGS); do \
		$(GO) test -tags "$$t" -run='^$$' -bench='^BenchmarkNoisyVsAnchors$$/deflate' -benchtime=5x -cpu=1,2 ./validate || exit 1; \
	done

generate:
	$(GO) generate ./fixtures

clean:
	rm -rf bin

# Fault harness (faults/): builds ./cmd/lazaret, runs it as separate processes
# against its own redis-server (free loopback port) and its own PostgreSQL
# role and database, kills workers, restarts and crashes Redis, cuts the
# ledger, races replay against discard, resubmits; then checks ledger and
# broker: nothing lost, settled twice, parked twice or in the wrong place.
# Table on stdout and in artifacts/faults.md, details in artifacts/faults/.
# The smoke run (CI) fails on any non-zero count.
.PHONY: faults faults-smoke
FAULTITEMS ?= 8000
faults:
	LAZARET_FAULTS=1 LAZARET_FAULTS_ITEMS=$(FAULTITEMS) LAZARET_FAULTS_KILLS=20 $(GO) test -count=1 -run='^TestFaults$$' -v -timeout 120m ./faults

faults-smoke:
	LAZARET_FAULTS=1 LAZARET_FAULTS_ITEMS=400 LAZARET_FAULTS_KILLS=4 LAZARET_FAULTS_STRICT=1 $(GO) test -count=1 -run='^TestFaults$$' -v -timeout 15m ./faults
