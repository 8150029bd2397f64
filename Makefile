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
bench: ## run the benchmarks and print their figures (latency percentiles, throughput)
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./api/ ./store/... ./reducer/ 2>&1 | grep -vE '^(goos|goarch|pkg|cpu):'

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
