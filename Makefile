# floe: build, run and test. `make run` needs only Go. `make test` also
# needs Python 3 with pip, Node.js with npm, and Java 17 with Maven for the
# client conformance suites (Trino's also a Java 24+, e.g. Temurin 25, which
# conformance/trino/run.sh finds under /usr/lib/jvm); their downloads are cached under git-ignored
# folders (.cache/, node_modules/), besides Go's, npm's own caches. The S3
# suites' MinIO (vended credentials need a server that enforces STS session
# policies) is built from its Go module by conformance/s3/run.sh the first
# time, into .cache/ (conformance/s3/minio.sh: about 1.2 GB of modules, 7
# to 28 minutes on two cores); the Spark and Trino suites reuse it.
# The console's browser test installs Debian's chromium when missing.

SHELL       := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO        ?= go
BIN       := bin/floe
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# `make run` settings.
ADDR      ?= 127.0.0.1:8181
DATA_DIR  ?= ./data
WAREHOUSE ?= ./warehouse

TEST_TIMEOUT ?= 30m
BENCH        ?= .
BENCHTIME    ?= 1s
FUZZTIME     ?= 20s

.PHONY: build run test check bench bench-peers lint layout fuzz clean

# The PostgreSQL tests (versionstore/pgbackend, conformance/testkit/replicas) start a
# private cluster; `make test` installs PostgreSQL first (pgtest/install.sh)
# and makes its absence a failure rather than a skip.
test: export FLOE_REQUIRE_POSTGRES := 1

## build: compile the floe binary into bin/floe
build:
	@# A fresh clone compiles in silence for minutes: say so once.
	@test -e $(BIN) || echo "floe: the first build downloads and compiles the dependencies; it may take several minutes (later builds are fast)"
	@# Built as deploy/Dockerfile builds it (static, -trimpath), so the image
	@# test's build of the same binary finds every package compiled already.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w -X main.version=$(VERSION)' -o $(BIN) ./cmd/floe

## run: build, then serve on $(ADDR) with the store in $(DATA_DIR)
run: build
	./$(BIN) serve --dev --data-dir $(DATA_DIR) --warehouse $(WAREHOUSE) --addr $(ADDR)

## test: fetch modules, vet, then run every test with the race detector
test: build
	bash conformance/testkit/pgtest/install.sh
	$(GO) mod download
	$(GO) vet ./...
	python3 docs/checklinks.py
	$(GO) test -race -shuffle=on -timeout $(TEST_TIMEOUT) ./...
	cd conformance/icebergjs && { cmp -s package-lock.json node_modules/.floe-lock || { npm ci --no-audit --no-fund && cp package-lock.json node_modules/.floe-lock; }; }
	cd conformance/icebergjs && FLOE_BIN=$(CURDIR)/$(BIN) node --test
	FLOE_BIN=$(CURDIR)/$(BIN) bash conformance/pyiceberg/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) bash conformance/duckdb/run.sh
	GO=$(GO) bash conformance/s3/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) SCHEMATHESIS_MAX_TIME=150 SCHEMATHESIS_SEED=16 bash conformance/schemathesis/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) bash conformance/spark/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) SPARK_LINE=4.1 bash conformance/spark/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) bash conformance/flink/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) bash conformance/trino/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) bash conformance/nessiejava/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) bash conformance/rck/run.sh
	FLOE_BIN=$(CURDIR)/$(BIN) GO=$(GO) bash server/console/test/run.sh

## check: the edit loop: gofmt, go vet, the Markdown links, then the Go
## tests in short mode, without the race detector or the client suites
## (make test is the whole suite, as CI runs it)
check: lint
	$(GO) test -short -timeout $(TEST_TIMEOUT) ./...

## bench: run floe and Nessie side by side (conformance/testkit/peerbench, needs Java
## 21+ for Nessie), then the benchmarks of every other package; tabulate;
## then bench-peers when Java is present
bench: build
	@bash conformance/testkit/peerbench/run.sh $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -timeout $(TEST_TIMEOUT) ./conformance/testkit/peerbench/ | tee bin/bench-peer.txt \
		|| echo "peer benchmark failed (see above); going on with the other benchmarks"
	@pkgs="$$(grep -rl --include='*_test.go' -E '^func Benchmark' . | xargs -r -n1 dirname | grep -v '^./conformance/testkit/peerbench$$' | sort -u)"; \
	if [ -z "$$pkgs" ]; then echo "no benchmarks found"; exit 0; fi; \
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -timeout $(TEST_TIMEOUT) $$pkgs | tee bin/bench.txt; \
	echo; \
	grep -h '^peer: \(machine\|floe\|nessie\):' bin/bench-peer.txt || true; \
	$(GO) run ./conformance/testkit/benchtable bin/bench-peer.txt bin/bench.txt
	@if command -v java >/dev/null || compgen -G '/usr/lib/jvm/*/bin/java' >/dev/null; then \
		$(MAKE) --no-print-directory bench-peers || echo "Iceberg REST peer benchmark failed (see above)"; \
	else echo "no Java: bench-peers skipped"; fi

## bench-peers: floe, Apache Iceberg's reference REST server and Nessie side
## by side on the Iceberg REST API (conformance/testkit/icebergpeers; Java 21+, Maven,
## Python 3); ICEBERGPEERS_STEP=2s ICEBERGPEERS_RUNS=1 for a quick look
bench-peers: build
	@mkdir -p bin
	@bash conformance/testkit/icebergpeers/run.sh | tee bin/bench-icebergpeers.txt

## lint: gofmt must have nothing to change, go vet must pass, and every
## relative link in the Markdown must resolve (docs/checklinks.py)
lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt -l reports:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	python3 docs/checklinks.py

## layout: rewrite docs/layout.md's package table from every doc.go (its
## test, in internal/layoutdoc, fails while the table is stale)
layout:
	$(GO) run ./internal/layoutdoc -w docs/layout.md

## fuzz: run every fuzz target in the module for $(FUZZTIME) each
fuzz:
	@found=0; \
	for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' "$$pkg" | grep '^Fuzz' || true); do \
			found=1; \
			echo "== $$pkg $$target for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
		done; \
	done; \
	if [ "$$found" = 0 ]; then echo "no fuzz targets in the module"; fi

## clean: remove build output (never ./data or ./warehouse)
clean:
	rm -rf bin
