#!/usr/bin/env bash
# Installs what `make test` needs that a fresh machine may lack: Debian's
# Chromium for the browser tests. Safe to run again; does nothing when present.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium (Debian package) for the browser tests..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is missing: install Debian's chromium package (apt-get install chromium)" >&2
    exit 1
  fi
fi
