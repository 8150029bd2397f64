# canvasd — run `make` for the list of targets.
SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
# PostgreSQL tests run when this is set (CI sets it; see .ci/run).
CANVASD_TEST_DATABASE_URL ?=
export CANVASD_TEST_DATABASE_URL

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

.PHONY: run
run: build ## build (with the web UI), then run canvasd on the embedded store in ./data (http://127.0.0.1:8080)
	bin/canvasd serve

.PHONY: build
build: ui ## build bin/canvasd with the web UI embedded
	@echo "== building bin/canvasd: the first build downloads about 400 MB of Go modules and compiles about 600 packages (each is listed as it compiles); later builds take seconds"
	$(GO) build -v -o bin/canvasd ./cmd/canvasd

# The web UI (web/ui, TypeScript) is bundled into web/dist, which the binary
# embeds. npm ci runs when the lockfile is newer than node_modules; the
# bundle is rebuilt when a source file is newer than it.
UI_SRC := $(filter-out %.test.ts,$(wildcard web/ui/src/* web/ui/shell/* clients/js/src/*.ts)) web/ui/build.mjs web/ui/index.html web/ui/package-lock.json
.PHONY: ui
ui: web/dist/index.html ## build the web UI bundle (Node 20 + npm) into web/dist

web/ui/node_modules/.package-lock.json: web/ui/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: the web UI needs Node.js 20 and npm (apt-get install nodejs npm)"; exit 1; }
	@echo "== installing the web UI's npm packages (npm ci in web/ui; first time: about 300 MB, a minute)"
	cd web/ui && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

web/dist/index.html: web/ui/node_modules/.package-lock.json $(UI_SRC)
	@echo "== bundling the web UI (esbuild) into web/dist"
	cd web/ui && npx tsc --noEmit -p . && node build.mjs

.PHONY: ui-test
ui-test: web/ui/node_modules/.package-lock.json ## the web UI's unit tests (node --test: the mapping of canvasd nodes and edges to Excalidraw elements, the planning of what a gesture sends, the order of a rebuilt agent chat)
	cd web/ui && npm test

.PHONY: deps
deps: ## install what the tests need and a fresh machine lacks (Chromium, a C compiler for the race detector)
	@scripts/ensure-test-deps.sh

# Without a database URL the PostgreSQL tests skip; say so before and after.
PG_NOTE = if [ -z "$$CANVASD_TEST_DATABASE_URL" ]; then echo "note: CANVASD_TEST_DATABASE_URL is not set, so the PostgreSQL tests are SKIPPED;" \
  "to run them: export CANVASD_TEST_DATABASE_URL='postgres://USER@127.0.0.1:5432/DB?sslmode=disable' (the tests make and drop their own schemas)"; fi

.PHONY: test
test: deps ui ## run every test suite (each to its end, then a summary): go vet, Go with the race detector (SQLite, PostgreSQL when CANVASD_TEST_DATABASE_URL is set, the host pages in Chromium), the web UI in Chromium (without it: see scripts/test-suites.sh), Python, TypeScript and the web UI's unit tests
	@$(PG_NOTE)
	@PYTHON=$(PYTHON) scripts/test-suites.sh; status=$$?; $(PG_NOTE); exit $$status

# The TypeScript client's npm packages: npm ci when the lockfile is newer
# than node_modules (as for web/ui). The tests' canvasd is built once here
# (CANVASD_BIN), not by each test file's process.
clients/js/node_modules/.package-lock.json: clients/js/package-lock.json
	cd clients/js && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: js-test
js-test: clients/js/node_modules/.package-lock.json ## the TypeScript client: npm ci (when the lockfile changed), generated types current, build, tests (Node and Chromium against canvasd)
	$(GO) build -o clients/js/.test-bin/canvasd ./cmd/canvasd
	cd clients/js && npm run check-generated && npm run build && CANVASD_BIN="$(CURDIR)/clients/js/.test-bin/canvasd" npm test

.PHONY: bench
bench: deps ui ## run the benchmarks of the performance targets (docs/architecture.md) and print their figures (a failing one is reported and the rest still run)
	@echo "== writes against the write floor (bare HTTP + JSON + SQLite insert, group commit, built in this run):"
	@echo "   10,000 commands, 8 clients, one canvas; x-floor = canvasd/floor (>= 0.85), big/empty = 50k-shape canvas/empty (>= 0.9)"
	-$(GO) test -run '^$$' -bench '^BenchmarkWrites$$' -benchtime 1x -timeout 20m ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== commit -> SSE fan-out against a bare Go SSE broadcaster, events sent on a fixed schedule (x-floor = p99 ratio, <= 1.1 at 1k and 5k, <= 1.0 at 10k, three rounds each; cpu-x-floor = server CPU per delivery ratio; publish-p99-ms = the command's answer time)"
	-$(GO) test -run '^$$' -bench '^BenchmarkSSEDelivery$$' -benchtime 1x -timeout 20m ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== command apply over HTTP (latency, throughput), resume of 1k missed commits"
	-$(GO) test -run '^$$' -bench '^Benchmark(CommandApplyHTTP|SSEResume)$$' -benchtime 1x -timeout 20m ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== engine throughput on the embedded store (no HTTP; x-one-canvas = a canvas holding 50k shapes / an empty one, >= 0.9), cold load of a 100k-shape canvas and heap per shape"
	-$(GO) test -run '^$$' -bench 'EngineExecute' -benchtime 200000x ./store/sqlitestore/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	-$(GO) test -run '^$$' -bench 'ColdLoad' -benchtime 1x -timeout 20m ./store/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== documents: line edit on 10k lines (reducer, engine, HTTP), diff of 10k lines with 100 changed"
	-$(GO) test -run '^$$' -bench 'LineEdit10k|Diff10k100' -benchtime 2000x ./reducer/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	-$(GO) test -run '^$$' -bench 'DocLineEdit' -benchtime 2000x ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== web UI in Chromium: open a canvas of 5,000 shapes (target <= 1 s, also at load 4: open-5k-busy-ms, the median of three opens beside two CPU-bound processes) and of 20,000 (<= 2.5 s), remote commit on screen at both (target p95 <= 50 ms)"
	-$(GO) test -run '^$$' -bench '^BenchmarkWebUI$$' -benchtime 1x -timeout 20m ./api/ | grep -E '^Benchmark|web_bench|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== agent: complete action in the model stream -> its commit (fake model)"
	-$(GO) test -run '^$$' -bench 'AgentActionToCommit' -benchtime 40x ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== agent SLOs with a host browser and a plain subscriber: model's first token -> first action, screenshot, apply jitter"
	-$(GO) test -run '^$$' -bench 'AgentBrowserSLOs' -benchtime 20x ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== agent loop with the web UI in Chromium as host (300 shapes, 12 turns of a streaming vision stub back to back, then 5 once the page has its picture ready): first action (SLO p95 <= 200 ms), screenshot (<= 150 ms), apply jitter (p95 <= 50 ms), p50 and p95, with the load average"
	-$(GO) test -run '^$$' -bench '^BenchmarkAgentHostPage$$' -benchtime 1x -timeout 10m ./api/ | grep -E '^Benchmark|agent_page_bench|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== files: server-drawn PNG of a 1,000-shape viewport (1,600 px wide; target <= 100 ms) and of a 10,000-shape canvas at 1x (target <= 1 s); cpu-ms/op is all cores"
	-$(GO) test -run '^$$' -bench 'PNGViewport1000|PNGCanvas10000' -benchtime 5x -timeout 10m ./render/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== files: the hardest Mermaid charts within the import's limits (links between random nodes, a third labelled): how long one layout holds a core"
	-$(GO) test -run '^$$' -bench 'MermaidWorstCase' -benchtime 3x -timeout 10m ./convert/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== files: import of a 5,000-node JSON Canvas file over HTTP, end to end (target <= 500 ms)"
	-$(GO) test -run '^$$' -bench 'ImportJSONCanvas5000' -benchtime 5x -timeout 10m ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== agent pages in Chromium: host action round trip (eval p95 <= 50 ms), snapshot of a 1280x800 page as PNG (p95 <= 300 ms), A2UI gallery on screen; with the load average"
	-$(GO) test -run '^$$' -bench '^BenchmarkHostPage$$' -benchtime 1x -timeout 10m ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'
	@echo "== PostgreSQL (needs CANVASD_TEST_DATABASE_URL): durable appends, HTTP apply (target >= 5,000 commits/s across 16 canvases), cross-process SSE;"
	@echo "   scale-out (PGScaleOut): 4 canvasd processes (the binary, real OS processes) on one PostgreSQL, 16 clients on 16 canvases, commits/s and commit -> SSE p50/p99 on the writing process (sse-same) and on another (sse-cross), beside 1 process, with the load average"
	-@if [ -n "$$CANVASD_TEST_DATABASE_URL" ]; then \
	  $(GO) test -run '^$$' -bench 'Append' -benchtime 3s ./store/pgstore/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'; \
	  $(GO) test -run '^$$' -bench 'PG' -benchtime 1x -timeout 20m ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:' | \
	    awk 'function v(u,  i) { for (i = 1; i < NF; i++) if ($$(i+1) == u) return $$i; return "?" } \
	      { print } \
	      /CommandApplyHTTP\/16-canvases-16-clients/ { sum = sprintf("PostgreSQL over HTTP, 16 clients on 16 canvases: %.0f commits/s, the median of 5 rounds (target >= 5000: %s)", v("cmds/s"), (v("cmds/s") >= 5000 ? "met" : "missed")) } \
	      /ScaleOut\/1-process/ { one = sprintf("%.0f commits/s, commit -> SSE p99 %s ms", v("cmds/s"), v("sse-same-p99-ms")) } \
	      /ScaleOut\/4-processes/ { four = sprintf("%.0f commits/s (%.2fx), commit -> SSE p99 %s ms on the writing process, %s ms on another (p50 %s ms), load %s", v("cmds/s"), v("x-one-process"), v("sse-same-p99-ms"), v("sse-cross-p99-ms"), v("sse-cross-p50-ms"), v("loadavg")) } \
	      END { if (sum != "") print sum; if (four != "") print "scale-out, 16 clients on 16 canvases: 4 processes " four "; 1 process " one }'; \
	else echo "skipped: set CANVASD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable"; fi
	@echo "== PostgreSQL (needs CANVASD_TEST_DATABASE_URL): what a linearizable snapshot read costs against ?consistency=local, one process and two (B reads while A commits 200/s; stale-% = local reads that missed an acknowledged commit)"
	-@if [ -n "$$CANVASD_TEST_DATABASE_URL" ]; then \
	  $(GO) test -run '^$$' -bench '^BenchmarkLinearizableReads$$' -benchtime 1x -timeout 20m ./api/ | grep -E '^Benchmark|FAIL|^panic|_test\.go:[0-9]+:'; \
	else echo "skipped: set CANVASD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable"; fi

# staticcheck at a fixed version, fetched through the module proxy on first use.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
