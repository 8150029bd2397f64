#!/usr/bin/env bash
# The suites of `make test`, run one after another. Each runs to its end even
# when an earlier one failed, so one failure never hides another suite's
# result; the summary at the end lists every suite with its result and time
# (and the Go tests that failed), and the exit status is 1 when any failed.
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
log=$(mktemp -t canvasd-gotest.XXXXXX)
trap 'rm -f "$log"' EXIT
results=()
failed=0

# suite NAME COMMAND...: runs COMMAND, records NAME's result and time.
suite() {
  local name=$1 t0=$SECONDS status
  shift
  echo "== $name: $*"
  "$@"
  status=$?
  if [ $status -eq 0 ]; then
    results+=("ok    $name ($((SECONDS - t0)) s)")
  else
    results+=("FAIL  $name ($((SECONDS - t0)) s, exit $status)")
    failed=1
  fi
}

go_tests() {
  go test -race -count=1 -timeout 30m ./... 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}

suite "go vet" go vet ./...
suite "Go tests, race detector (SQLite, PostgreSQL when CANVASD_TEST_DATABASE_URL is set, Chromium)" go_tests
suite "Python client" "$PYTHON" -m unittest discover -s clients/python/tests -t clients/python
suite "TypeScript client" make --no-print-directory js-test

echo
echo "== make test: summary"
printf '  %s\n' "${results[@]}"
if grep -qE '^(--- FAIL|FAIL)' "$log"; then
  echo "  failed Go tests and packages:"
  grep -E '^(--- FAIL|FAIL)' "$log" | sed 's/^/    /'
fi
echo "  browser test screenshots: $PWD/test-artifacts/web/"
exit $failed
