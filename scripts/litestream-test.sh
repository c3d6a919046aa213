#!/usr/bin/env bash
# Runs the replication end-to-end tests (tests/litestream_test.go) against
# the pinned Litestream release, installing it first if needed.
#
# Litestream is found, in this order: $MCP_SQLITE_LITESTREAM; the cache
# folder (outside the checkout); a `litestream` on PATH that reports the
# pinned version; else it is built into the cache folder with go install
# (the first build takes minutes; the binary is about 80 MB).
#
#   scripts/litestream-test.sh                # install if needed, run the tests
#   scripts/litestream-test.sh -count=3 -v    # extra go test flags
#   LITESTREAM_CACHE=/opt/ls scripts/litestream-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

version=v0.5.18 # keep in step with server.LitestreamVersion
cache="${LITESTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-sqlite-memory/litestream-$version}"

bin="${MCP_SQLITE_LITESTREAM:-}"
if [ -z "$bin" ] && [ -x "$cache/litestream" ]; then
  bin="$cache/litestream"
fi
if [ -z "$bin" ] && command -v litestream >/dev/null 2>&1 \
    && [ "$(litestream version 2>/dev/null)" = "$version" ]; then
  bin="$(command -v litestream)"
fi
if [ -z "$bin" ]; then
  echo "installing Litestream $version into $cache (go install; the first build takes minutes)" >&2
  mkdir -p "$cache"
  GOBIN="$cache" go install "github.com/benbjohnson/litestream/cmd/litestream@$version"
  bin="$cache/litestream"
fi

got="$("$bin" version 2>/dev/null || true)"
if [ "$got" != "$version" ]; then
  echo "warning: $bin reports ${got:-no version}; the tests are written for Litestream $version" >&2
fi
echo "litestream: $bin ($got)" >&2
MCP_SQLITE_LITESTREAM="$bin" go test -run 'TestLitestream|TestReplicate' -count=1 "$@" ./tests/
# Litestream as another program on a running server's file (issue 17).
MCP_SQLITE_LITESTREAM="$bin" exec go test -run 'TestNeighbours/Litestream' -count=1 "$@" ./tests/
