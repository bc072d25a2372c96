#!/usr/bin/env bash
# `loom gguf dump` end to end: the text table, valid JSON, and the error path (message on stderr,
# non-zero exit). Usage: check_tool.sh LOOM_BINARY REPO_ROOT
set -euo pipefail
loom="$1"
model="$2/../shared/models/stories260K.gguf"
[ -f "$model" ] || { echo "missing $model (../shared/models beside the repository)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

text=$("$loom" gguf dump "$model")
grep -q "^GGUF v3: 1185376 bytes, 19 keys, 48 tensors, alignment 32" <<<"$text" || fail "header line"
grep -Eq "^  llama.block_count +uint32 +5$" <<<"$text" || fail "metadata line"
grep -Eq "tokenizer.ggml.tokens +array of string +\[\"<unk>\", .*\.\.\. 512 elements\]" <<<"$text" ||
    fail "abbreviated array"
grep -Eq "^ +9  blk.0.ffn_down.weight +F32 +\[172, 64\] +355840 +44032$" <<<"$text" || fail "tensor row"

json=$("$loom" gguf dump --json "$model")
grep -q '"tensors":\[{"name":"token_embd.weight","type":"F32","shape":\[64,512\],"offset":0,"bytes":131072}' <<<"$json" ||
    fail "JSON tensor"
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["metadata"][0]["value"]) == 512' <<<"$json" ||
        fail "JSON does not parse"
fi

set +e
err=$("$loom" gguf dump "$2/README.md" 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "exit code 0 on a bad file"
grep -q "^loom gguf: error: \[gguf\] .*README.md: header at byte 0: bad magic" <<<"$err" || fail "error message: $err"
echo "loom gguf dump: text, JSON and errors as expected"
