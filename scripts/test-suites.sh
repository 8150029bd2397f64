#!/usr/bin/env bash
# The suites of `make test`. Each runs to its end even when another failed,
# so one failure never hides another suite's result; the summary at the end
# lists every suite with its result and time (and the Go tests that failed),
# and the exit status is 1 when any failed.
#
# To use both cores of a small machine, the suites run side by side: the Go
# tests in two processes (the web UI's Chromium tests of package api, and
# everything else), and the Python, TypeScript and web UI unit suites one
# after another beside them. Each suite's output is kept in its own file and
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
run go gotest -skip '^TestWebUI' ./...
wait "$webui_pid" "$clients_pid"

report go "Go tests, race detector (SQLite, PostgreSQL when CANVASD_TEST_DATABASE_URL is set)"
report go-webui "Go tests of the web UI in Chromium (package api, TestWebUI*; no race detector, see above)"
report python "Python client"
report ts "TypeScript client"
report ui "web UI unit tests"

echo
echo "== make test: summary"
printf '  %s\n' "${results[@]}"
if grep -qE '^(--- FAIL|FAIL)' "$dir/go.log" "$dir/go-webui.log"; then
  echo "  failed Go tests and packages:"
  grep -hE '^(--- FAIL|FAIL)' "$dir/go.log" "$dir/go-webui.log" | sed 's/^/    /'
fi
echo "  browser test screenshots: $PWD/test-artifacts/web/"
exit $failed
