#!/usr/bin/env bash
# scripts/rqlite.sh: build rqlited v8.43.4 (cluster mode's engine, SPEC 13)
# once per machine into a cache folder keyed by its version, and print its
# path. The build uses the tools module tools/rqlite (rqlite's replace
# lines; cgo, gcc) and takes about 5 minutes on 2 cores the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v8.43.4 # keep in step with tools/rqlite/go.mod
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mcp-sqlite-memory/rqlite-$version"
if [ ! -x "$cache/rqlited" ]; then
  echo "building rqlited $version into $cache (once per machine, a few minutes)" >&2
  mkdir -p "$cache"
  (cd tools/rqlite && CGO_ENABLED=1 go build -o "$cache/rqlited" github.com/rqlite/rqlite/v8/cmd/rqlited) >&2
fi
echo "$cache/rqlited"
