#!/usr/bin/env bash
# The suites of `make test`. Each runs to its end even when another failed,
# so one failure never hides another suite's result; the summary at the end
# lists every suite with its result and time (and the Go tests that failed),
# and the exit status is 1 when any failed.
#
# To use both cores of a small machine, the suites run side by side: the Go
# tests in four processes (the web UI's Chromium tests of package api, the
# rest of api's tests in two halves, and every other package), and the
# Python, TypeScript and web UI unit suites one after another beside them. Each suite's output is kept in its own file and
# printed whole when it ends, so outputs never interleave.
#
# The web UI's Chromium tests (TestWebUI*) run without the race detector:
# they exist for what the page does (Chromium is not instrumented), and the
# server code they reach (commands, streams, presence, documents, files,
# agent runs, host pages) runs under the race detector in the other process,
# by its API tests and by the host's Chromium tests. Race made them cost
# about 40% more CPU (6 of them: 50.5 CPU-s with it, 36.3 without) on a
# 2-core machine where the two Go processes are the longest suites. To run
# them with it: go test -race -run '^TestWebUI' ./api
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
dir=$(mktemp -d -t canvasd-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
results=()
failed=0

# run NAME COMMAND...: runs COMMAND with its output in $dir/NAME.log and its
# exit status and time in $dir/NAME.status.
run() {
  local name=$1 t0=$SECONDS status
  shift
  "$@" >"$dir/$name.log" 2>&1
  status=$?
  echo "$status $((SECONDS - t0))" >"$dir/$name.status"
}

# report NAME TITLE: prints NAME's output and records its result as TITLE.
report() {
  local name=$1 title=$2 status secs
  read -r status secs <"$dir/$name.status"
  echo "== $title"
  cat "$dir/$name.log"
  if [ "$status" -eq 0 ]; then
    results+=("ok    $title ($secs s)")
  else
    results+=("FAIL  $title ($secs s, exit $status)")
    failed=1
  fi
}

gotest() { go test -race -count=1 -timeout 30m "$@"; }
webuitest() { go test -count=1 -timeout 30m -run '^TestWebUI' ./api; }

# Package api holds most of the Go tests' time, so its race tests run in
# two processes (alternate tests of its list each), beside the other
# packages': otherwise one core idles while api's tests finish alone.
# apihalf N prints the -run pattern of half N (0 or 1).
apihalf() {
  go test -race -list '^Test' ./api | grep '^Test' | grep -v '^TestWebUI' |
    awk -v n="$1" 'NR % 2 == n' | paste -sd'|' | sed 's/^/^(/; s/$/)$/'
}

run vet go vet ./...
report vet "go vet"
# Compile every test binary once, so the two Go processes below do not
# both build the same packages (and the web UI's, without race).
go test -race -count=1 -run '^$' ./... >/dev/null 2>&1
go test -count=1 -run '^$' ./api >/dev/null 2>&1

clients() {
  run python "$PYTHON" -m unittest discover -s clients/python/tests -t clients/python
  run ts make --no-print-directory js-test
  run ui make --no-print-directory ui-test
}
clients &
clients_pid=$!
run go-webui webuitest &
webui_pid=$!
api0=$(apihalf 0)
api1=$(apihalf 1)
run go-api0 gotest -run "$api0" ./api &
api0_pid=$!
run go-api1 gotest -run "$api1" ./api &
api1_pid=$!
run go gotest $(go list ./... | grep -v '/api$')
wait "$webui_pid" "$clients_pid" "$api0_pid" "$api1_pid"

report go "Go tests, race detector, every package but api (SQLite, PostgreSQL when CANVASD_TEST_DATABASE_URL is set)"
report go-api0 "Go tests of package api, race detector, first half"
report go-api1 "Go tests of package api, race detector, second half"
report go-webui "Go tests of the web UI in Chromium (package api, TestWebUI*; no race detector, see above)"
report python "Python client"
report ts "TypeScript client"
report ui "web UI unit tests"

echo
echo "== make test: summary"
printf '  %s\n' "${results[@]}"
if grep -qE '^(--- FAIL|FAIL)' "$dir"/go*.log; then
  echo "  failed Go tests and packages:"
  grep -hE '^(--- FAIL|FAIL)' "$dir"/go*.log | sed 's/^/    /'
fi
echo "  browser test screenshots: $PWD/test-artifacts/web/"
exit $failed
