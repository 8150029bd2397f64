#!/usr/bin/env bash
# Installs what `make test` needs that a fresh machine may lack: Debian's
# Chromium for the browser tests and a C compiler for the race detector
# (go test -race needs cgo). Safe to run again; does nothing when present.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (Debian packages) for the tests..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "missing for the tests: ${missing[*]} (apt-get install ${missing[*]})" >&2
  exit 1
fi
