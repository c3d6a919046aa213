#!/usr/bin/env bash
# Builds a release (docs/install.md):
#   scripts/release.sh VERSION [-out DIR] [-targets GOOS/GOARCH,...]
# writes into dist/ (or DIR):
#   mcp-sqlite-memory_VERSION_OS_ARCH.tar.gz (.zip for Windows), SHA256SUMS
#   npm/<package>/            the npm packages, and npm/*.tgz packed from them
#   mcpb/                     the MCP Bundle's folder, and mcp-sqlite-memory.mcpb
#                             packed from it (with its .sha256)
#   server.json               the MCP Registry entry
# The archives are reproducible: the same commit and Go toolchain give the
# same bytes. Packing needs npm (the bundle: @anthropic-ai/mcpb 2.1.2, or
# MCP_SQLITE_MCPB naming an mcpb command); without npm only the archives,
# the package folders and server.json are written.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  echo "usage: scripts/release.sh VERSION [-out DIR] [-targets GOOS/GOARCH,...]   (for example: scripts/release.sh 0.4.0)" >&2
  exit 2
fi
version="$1"; shift
out=dist
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[i]}" = "-out" ] && out="${args[i+1]}"
done
go run ./scripts/release "$@" "$version"

if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: the npm packages and the bundle are left as folders in $out" >&2
  exit 0
fi
for dir in "$out"/npm/*/; do
  (cd "$dir" && npm pack --silent --pack-destination ..) >/dev/null
done
if [ -f "$out/mcpb/manifest.json" ]; then
  if [ -n "${MCP_SQLITE_MCPB:-}" ]; then mcpb=("$MCP_SQLITE_MCPB"); else mcpb=(npx --yes @anthropic-ai/mcpb@2.1.2); fi
  "${mcpb[@]}" validate "$out/mcpb/manifest.json"
  "${mcpb[@]}" pack "$out/mcpb" "$out/mcp-sqlite-memory.mcpb" >/dev/null
  (cd "$out" && sha256sum mcp-sqlite-memory.mcpb > mcp-sqlite-memory.mcpb.sha256)
fi
ls -1 "$out"
