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
run: ## run canvasd on the embedded store in ./data (http://127.0.0.1:8080)
	$(GO) run ./cmd/canvasd serve

.PHONY: build
build: ## build bin/canvasd
	$(GO) build -o bin/canvasd ./cmd/canvasd

.PHONY: deps
deps: ## install what the tests need and a fresh machine lacks (Chromium)
	@scripts/ensure-test-deps.sh

.PHONY: test
test: deps ## run every test: Go (SQLite, PostgreSQL when CANVASD_TEST_DATABASE_URL is set, Chromium) and Python
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	$(PYTHON) -m unittest discover -s clients/python/tests -t clients/python

.PHONY: bench
bench: ## run the benchmarks of DESIGN.md's performance targets and print their figures
	@echo "== command apply over HTTP, SSE fan-out (1k and 10k subscribers), resume, memory per subscriber"
	$(GO) test -run '^$$' -bench '^Benchmark(CommandApplyHTTP|SSEDelivery|SSEResume)$$' -benchtime 1x -timeout 20m ./api/ | grep -E '^Benchmark'
	@echo "== engine throughput on the embedded store (no HTTP), cold load of 100k commits"
	$(GO) test -run '^$$' -bench 'EngineExecute' -benchtime 40000x ./store/sqlitestore/ | grep -E '^Benchmark'
	$(GO) test -run '^$$' -bench 'ColdLoad' -benchtime 1x ./store/ | grep -E '^Benchmark'
	@echo "== documents: line edit on 10k lines (reducer, engine, HTTP), diff of 10k lines with 100 changed"
	$(GO) test -run '^$$' -bench 'LineEdit10k|Diff10k100' -benchtime 2000x ./reducer/ | grep -E '^Benchmark'
	$(GO) test -run '^$$' -bench 'DocLineEdit' -benchtime 2000x ./api/ | grep -E '^Benchmark'
	@echo "== agent: complete action in the model stream -> its commit (fake model)"
	$(GO) test -run '^$$' -bench 'AgentActionToCommit' -benchtime 40x ./api/ | grep -E '^Benchmark'
	@echo "== PostgreSQL (needs CANVASD_TEST_DATABASE_URL): durable appends, HTTP apply, cross-process SSE"
	@if [ -n "$$CANVASD_TEST_DATABASE_URL" ]; then \
	  $(GO) test -run '^$$' -bench 'Append' -benchtime 3s ./store/pgstore/ | grep -E '^Benchmark'; \
	  $(GO) test -run '^$$' -bench 'PG' -benchtime 1x -timeout 20m ./api/ | grep -E '^Benchmark'; \
	else echo "skipped: set CANVASD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable"; fi

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
