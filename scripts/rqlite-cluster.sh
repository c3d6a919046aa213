#!/usr/bin/env bash
# scripts/rqlite-cluster.sh: start a local 3-node rqlite cluster for trying
# cluster mode (docs/cluster.md), print the flags a front uses, and stop
# the nodes on Ctrl-C.
#
#   bash scripts/rqlite-cluster.sh [DATA_DIR]
#
# DATA_DIR (default ./rqlite-data) holds one directory per node (n1, n2,
# n3) and their logs; run the script again on the same DATA_DIR and the
# nodes start from their own Raft state. Ports: node i listens on
# 127.0.0.1:40i1 (HTTP API) and 127.0.0.1:40i2 (Raft), i = 0, 1, 2
# (4001/4002, 4011/4012, 4021/4022); RQLITE_HOST and RQLITE_PORT_BASE
# (default 4001) move them. rqlited comes from $MCP_SQLITE_RQLITED, else
# from scripts/rqlite.sh (which builds it once).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="${1:-./rqlite-data}"
host="${RQLITE_HOST:-127.0.0.1}"
base="${RQLITE_PORT_BASE:-4001}"
rqlited="${MCP_SQLITE_RQLITED:-$(bash "$here/rqlite.sh")}"
mkdir -p "$data"
data="$(cd "$data" && pwd)"

http=() raft=() pids=()
for i in 0 1 2; do
  http+=("$host:$((base + 10 * i))")
  raft+=("$host:$((base + 10 * i + 1))")
done
join="$(IFS=,; echo "${raft[*]}")"

stop() {
  trap - INT TERM EXIT
  echo "stopping the nodes" >&2
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

for i in 0 1 2; do
  n=$((i + 1))
  # -auto-optimize-int 0h -auto-vacuum-int 0h: no node-local maintenance,
  # which would make the nodes' files differ (docs/cluster.md).
  "$rqlited" -node-id "n$n" -http-addr "${http[$i]}" -raft-addr "${raft[$i]}" \
    -bootstrap-expect 3 -join "$join" \
    -auto-optimize-int 0h -auto-vacuum-int 0h \
    "$data/n$n" >>"$data/n$n.log" 2>&1 &
  pids+=("$!")
done

echo "waiting for a leader (logs: $data/n1.log ...)" >&2
for _ in $(seq 1 300); do
  if curl -fsS "http://${http[0]}/readyz" >/dev/null 2>&1; then
    break
  fi
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || { echo "a node stopped: see $data/n*.log" >&2; exit 1; }
  done
  sleep 0.1
done
curl -fsS "http://${http[0]}/readyz" >/dev/null || { echo "no leader after 30 s: see $data/n*.log" >&2; exit 1; }

urls="http://${http[0]},http://${http[1]},http://${http[2]}"
cat <<EOF
rqlite cluster up: 3 nodes, data under $data
  node 1: http://${http[0]}  data $data/n1
  node 2: http://${http[1]}  data $data/n2
  node 3: http://${http[2]}  data $data/n3
A front beside node 1 runs with:
  --rqlite $urls --rqlite-data $data/n1
(beside node 2 or 3: the same --rqlite, --rqlite-data $data/n2 or $data/n3)
Ctrl-C stops the nodes.
EOF
wait
