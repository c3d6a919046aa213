#!/usr/bin/env bash
# Installs node-oidc-provider (the certified OpenID provider), which the
# OAuth end-to-end tests (tests/oauth_test.go) start as the authorization
# server, into a cache folder outside the checkout, once per machine, and
# prints the folder. The tests find it through MCP_SQLITE_OIDC_PROVIDER:
#
#   export MCP_SQLITE_OIDC_PROVIDER="$(scripts/oidc-provider.sh)"
#
# It asks for Node 22 and runs on Node 20 with a warning (npm's engine
# check is a warning too).
set -euo pipefail
version=9.13.3 # keep in step with docs/http.md
dir="${XDG_CACHE_HOME:-$HOME/.cache}/mcp-sqlite-memory/oidc-provider-$version"
if [ ! -f "$dir/node_modules/oidc-provider/package.json" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm is needed to install oidc-provider (apt-get install nodejs npm)" >&2; exit 1; }
  mkdir -p "$dir"
  npm install --silent --no-audit --no-fund --prefix "$dir" "oidc-provider@$version" >&2
fi
echo "$dir"
