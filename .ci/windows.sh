#!/usr/bin/env bash
# Windows test binaries of the packages with Windows code or Windows paths
# (ipc, policy, worker, memory, audit, portable, osfile, replicate): cross-compiled always, and run
# under Wine where Wine can be had from Debian's packages (about 20 s to
# install on a fresh machine, a few seconds per run after). Anything that
# keeps Wine from running prints the reason and exits 0: this is extra
# coverage of the Windows code (suspended start, Job Object, resume, file
# locks, limits, directory sync, Windows paths in configs), not a
# replacement for the windows-latest job in .github/workflows/ci.yml.
#
# Then the end-to-end suite (tests/) runs as a Windows binary against the
# cross-compiled .exe pair (MCP_SQLITE_E2E_BIN), and .ci/winereport says
# which tests ran, passed and skipped (with their reasons). Tests that fail
# are run once more, one at a time: Wine runs the suite several times
# slower than Linux, and a test with a time bound that passes alone is
# reported as such, never hidden.
#
#   WINE_TESTS=0   build only, never install or run Wine
#   WINE_TESTS=1   fail (exit 1) when Wine cannot be installed or started
#   WINE_E2E=0     skip the end-to-end suite
#   WINE_KEEP=1    keep the work folder (test2json outputs) for a look after
#   WINE_BENCH=1   also run the latency and spawn benchmarks under Wine
#                  (ratios against an empty Go .exe; docs/performance.md)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode="${WINE_TESTS:-auto}"
work=$(mktemp -d "${TMPDIR:-/tmp}/mcp-sqlite-memory-wine.XXXXXX")
if [ "${WINE_KEEP:-0}" = 1 ]; then
  echo "wine: keeping the outputs in $work"
else
  trap 'rm -rf "$work"' EXIT
fi

pkgs=(ipc policy worker memory audit portable osfile replicate)
for p in "${pkgs[@]}"; do
  GOOS=windows GOARCH=amd64 go test -c -o "$work/$p.test.exe" "./$p"
done
GOOS=windows GOARCH=amd64 go test -c -o "$work/tests.test.exe" ./tests
mkdir -p "$work/bin"
# The server with the hold of tests/TestNoWorkerOutsideItsJob (ipc/testhold.go),
# as tests/main_test.go builds it, and the eval command beside it.
GOOS=windows GOARCH=amd64 go build -tags testhold -o "$work/bin/" ./cmd/mcp-sqlite-memory ./cmd/mcp-sqlite-memory-worker ./cmd/mcp-sqlite-memory-eval
# The spawn benchmark's yardstick: an empty Go program, built the same way.
mkdir -p "$work/empty"
printf 'package main\n\nfunc main() {}\n' >"$work/empty/main.go"
printf 'module empty\n\ngo 1.26\n' >"$work/empty/go.mod"
(cd "$work/empty" && GOOS=windows GOARCH=amd64 go build -o "$work/bin/empty.exe" .)
echo "built Windows test binaries: ${pkgs[*]} tests, and the server and worker .exe pair"

skip() {
  if [ "$mode" = 1 ]; then
    echo "windows.sh: $1 (WINE_TESTS=1, so this fails)"; exit 1
  fi
  echo "windows.sh: not running them under Wine: $1"; exit 0
}
[ "$mode" = 0 ] && skip "WINE_TESTS=0"

have_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
apt_install() {
  have_apt || return 1
  local start=$SECONDS
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >"$work/apt.log" 2>&1; then
    apt-get update -qq >"$work/apt.log" 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >"$work/apt.log" 2>&1 || { tail -5 "$work/apt.log"; return 1; }
  fi
  echo "installed $* in $((SECONDS - start)) s"
}

wine=""
for w in wine64 /usr/lib/wine/wine64 wine; do
  if command -v "$w" >/dev/null 2>&1; then wine=$(command -v "$w"); break; fi
done
if [ -z "$wine" ]; then
  apt_install wine64 || skip "Wine is not installed and apt-get could not install wine64"
  wine=/usr/lib/wine/wine64
  [ -x "$wine" ] || wine=$(command -v wine64 || command -v wine || true)
  [ -n "$wine" ] || skip "wine64 installed but no wine binary found"
fi

# A prefix of our own, so that a developer's ~/.wine is left alone; no
# Mono or Gecko downloads (there is no network for them).
export WINEPREFIX="${MCP_WINEPREFIX:-$HOME/.cache/mcp-sqlite-memory-wine}"
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" DISPLAY=
mkdir -p "$WINEPREFIX"
if [ ! -d "$WINEPREFIX/drive_c/windows/system32" ]; then
  timeout 120 "$wine" wineboot --init >"$work/wineboot.log" 2>&1 || { tail -5 "$work/wineboot.log"; skip "wineboot failed"; }
fi

# The Go runtime (1.24+) needs ProcessPrng from bcryptprimitives.dll, a
# Windows 10 DLL that Debian 12's Wine 8 lacks. A two-line stand-in that
# forwards to RtlGenRandom is built with MinGW when it is missing.
sys32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -f "$sys32/bcryptprimitives.dll" ]; then
  if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
    apt_install gcc-mingw-w64-x86-64-win32 || skip "bcryptprimitives.dll is missing in Wine and MinGW could not be installed to build a stand-in"
  fi
  cat >"$work/prng.c" <<'EOF'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n; len -= n;
    }
    return TRUE;
}
EOF
  x86_64-w64-mingw32-gcc -shared -O2 -o "$sys32/bcryptprimitives.dll" "$work/prng.c" -ladvapi32 \
    || skip "could not build the bcryptprimitives.dll stand-in"
fi

# Go's os.RemoveAll deletes with FILE_DISPOSITION_POSIX_SEMANTICS, which
# Wine 8 answers with "Invalid function" instead of a status Go falls back
# on; every t.TempDir cleanup then fails. .ci/winereport reads each run's
# test2json events and counts a test whose only failures are those
# cleanups as passed (tests/ uses testDir, which has no such failure).
# reap ends and reports the worker processes the run left behind. A worker
# is created inside its Job Object (PROC_THREAD_ATTRIBUTE_JOB_LIST), so none
# should outlive its server; before that, workers created suspended whose
# server was killed before it put them in their job (the fault tests kill
# servers at random moments) were left here, one to six a run
# (docs/windows.md).
reap() {
  local left
  left=$(pgrep -f 'mcp-sqlite-memory-e2e-.*\.exe' || true)
  if [ -n "$left" ]; then
    echo "wine: $(echo "$left" | wc -l) worker process(es) outlived their servers; ending them"
    kill $left 2>/dev/null || true
  fi
}
go build -o "$work/winereport" ./.ci/winereport
# Skips are judged as in the Linux steps: a reason .ci/allowed-skips-wine
# does not list fails the step (docs/windows.md lists the reasons).
go build -o "$work/skipcheck" ./.ci/skipcheck
skipcheck_wine() { "$work/skipcheck" -skips-only -allow "$root/.ci/allowed-skips-wine" || failed=1; }
failed=0
# The unit packages run two at a time: their tests mostly run one after
# another, so one package keeps about one core busy. ipc goes first and
# alone: its pool tests bound how soon standbys start and die, which a
# neighbour under Wine delays. A test that fails is run once more alone,
# as in the end-to-end suite below.
run_unit() {
  local p=$1 out=$2 start=$SECONDS
  shift 2
  (cd "$root/$p" && timeout 600 "$wine" "$work/$p.test.exe" -test.v=test2json -test.short -test.timeout 300s "$@") >"$out" 2>&1 || true
  echo $((SECONDS - start)) >"$out.secs"
}
start=$SECONDS
for p in "${pkgs[@]}"; do
  if [ "$p" = ipc ]; then
    run_unit ipc "$work/ipc.out"
    continue
  fi
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
  run_unit "$p" "$work/$p.out" &
done
wait
reap
for p in "${pkgs[@]}"; do
  skipcheck_wine < <(go tool test2json -t -p "$p" <"$work/$p.out")
  if go tool test2json -t -p "$p" <"$work/$p.out" | "$work/winereport" -p "$p" -failed "$work/$p.failed"; then
    echo "   ($p: $(cat "$work/$p.out.secs") s)"
  elif [ -s "$work/$p.failed" ]; then
    again=$(paste -sd'|' "$work/$p.failed")
    echo "wine: $p: running the failed tests again, alone: $again"
    run_unit "$p" "$work/$p.again.out" -test.run "^($again)\$"
    reap
    if go tool test2json -t -p "$p" <"$work/$p.again.out" | "$work/winereport" -p "$p"; then
      echo "wine: $p: they passed alone (time bounds under a loaded Wine)"
    else
      failed=1
    fi
  else
    failed=1
  fi
done
echo "wine: unit packages in $((SECONDS - start)) s"

# The end-to-end suite. Its tests use testDir, whose cleanup works under
# Wine, so any failure here is a failure.
bindir="Z:$(echo "$work/bin" | tr / '\\')"
if [ "${WINE_E2E:-1}" != 0 ]; then
  # The run's output goes to a file, not a pipe: a worker that outlives its
  # server (see reap below) would hold a pipe open and hang the step.
  run_e2e() {
    (cd "$root/tests" && MCP_SQLITE_E2E_BIN="$bindir" timeout 1500 "$wine" "$work/tests.test.exe" \
      -test.v=test2json -test.short -test.timeout 1400s "$@") >"$work/e2e.out" 2>&1 || true
    reap
    go tool test2json -t -p tests <"$work/e2e.out"
  }
  start=$SECONDS
  run_e2e >"$work/e2e.json" || true
  skipcheck_wine <"$work/e2e.json"
  if "$work/winereport" -p tests -failed "$work/e2e.failed" <"$work/e2e.json"; then
    echo "wine: end-to-end suite passed in $((SECONDS - start)) s"
  elif [ -s "$work/e2e.failed" ]; then
    again=$(paste -sd'|' "$work/e2e.failed")
    echo "wine: running the failed tests again, one at a time: $again"
    run_e2e -test.parallel 1 -test.run "^($again)\$" >"$work/e2e-again.json" || true
    if "$work/winereport" -p tests <"$work/e2e-again.json"; then
      echo "wine: they passed alone (time bounds under a loaded Wine); $((SECONDS - start)) s in all"
    else
      failed=1
    fi
  else
    failed=1
  fi
fi

if [ "${WINE_BENCH:-0}" = 1 ]; then
  echo "wine: benchmarks (Wine is not Windows: its process starts and pipes cost what Wine's server makes them cost)"
  (cd "$root/tests" && MCP_SQLITE_E2E_BIN="$bindir" timeout 1200 "$wine" "$work/tests.test.exe" \
    -test.run '^$' -test.bench "${WINE_BENCH_PATTERN:-CallLatency|WorkerSpawn}" -test.benchtime "${WINE_BENCHTIME:-20x}") 2>&1 \
    | grep -E '^(Benchmark|ok|FAIL|PASS)' || failed=1
fi
exit "$failed"
