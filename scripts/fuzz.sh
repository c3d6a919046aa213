#!/usr/bin/env bash
# Runs every go test -fuzz target in the module for N seconds each (default
# 30). The seed corpora under testdata/fuzz run with the ordinary tests;
# this is for longer searches. A failing input is saved under that package's
# testdata/fuzz/<Target>/ by go test, and this script exits non-zero.
#
#   scripts/fuzz.sh          # 30 s per target
#   scripts/fuzz.sh 300      # 5 min per target
#   FUZZ_ONLY=FuzzReadRequest scripts/fuzz.sh 60
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-30}"
case "$secs" in
  ''|*[!0-9]*) echo "usage: $0 [SECONDS]   (a whole number of seconds per target, e.g. $0 60)" >&2; exit 2 ;;
esac

# Every "func FuzzX(f *testing.F)" in a _test.go file, as "dir target".
targets=$(grep -rEo --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' . \
  | grep -v '^./vendor/' \
  | sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#\1 \2#' | sort -u)
if [ -z "$targets" ]; then
  echo "no fuzz targets found" >&2; exit 1
fi

failed=0
while read -r dir target; do
  if [ -n "${FUZZ_ONLY:-}" ] && [ "$target" != "$FUZZ_ONLY" ]; then
    continue
  fi
  echo "== $target ($dir, ${secs}s)"
  if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "${secs}s" "$dir"; then
    echo "!! $target failed; the input is saved under $dir/testdata/fuzz/$target/"
    failed=1
  fi
done <<< "$targets"
exit "$failed"
