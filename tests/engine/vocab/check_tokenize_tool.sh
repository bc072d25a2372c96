#!/usr/bin/env bash
# `loom tokenize` end to end on stories260K: the id list, the per-token lines and the flags.
# Usage: check_tokenize_tool.sh LOOM_BINARY REPO_ROOT
set -euo pipefail
loom="$1"
model="$2/../shared/models/stories260K.gguf"
[ -f "$model" ] || { echo "missing $model (../shared/models beside the repository)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

ids=$("$loom" tokenize -m "$model" -p "Once upon a time" --ids)
[ "$ids" = "[1, 403, 407, 261, 378]" ] || fail "--ids: $ids"
ids=$("$loom" tokenize -m "$model" -p "Once upon a time" --ids --no-bos)
[ "$ids" = "[403, 407, 261, 378]" ] || fail "--no-bos: $ids"
ids=$("$loom" tokenize -m "$model" -p "<s>Once" --ids --parse-special)
[ "$ids" = "[1, 1, 403]" ] || fail "--parse-special: $ids"

lines=$("$loom" tokenize -m "$model" -p "Once upon a time")
grep -qx "     1 -> '<s>'" <<<"$lines" || fail "BOS line: $lines"
grep -qx "   403 -> ' Once'" <<<"$lines" || fail "token line: $lines"
echo "loom tokenize: ids and token lines as expected"
