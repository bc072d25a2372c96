#!/usr/bin/env bash
# `loom quantize` end to end: stories260K to Q4_K_M (the 172-wide ffn_down falls back to F16 as in
# llama.cpp) and IQ4_XS, and a MoE fixture to MXFP4_MOE, that `loom run` then generates text with,
# a --pure Q8_0 file identical to llama-quantize's fixture, and the error paths (message, non-zero
# exit, no file left behind).
# Usage: check_quantize.sh LOOM_BINARY REPO_ROOT
set -euo pipefail
loom="$1"
model="$2/../shared/models/stories260K.gguf"
fixtures="$2/../shared/fixtures"
[ -f "$model" ] || { echo "missing $model (../shared/models beside the repository)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT

"$loom" quantize "$model" "$tmp/q4km.gguf" Q4_K_M --threads 2 >"$tmp/out" 2>"$tmp/err" ||
    fail "Q4_K_M: $(cat "$tmp/err")"
# stderr is a file here: progress as plain lines, one a tenth of the way at most.
grep -q "^quantizing: 100% (48/48 tensors)$" "$tmp/err" || fail "no progress: $(cat "$tmp/err")"
[ "$(grep -c "^quantizing: " "$tmp/err")" -le 11 ] || fail "too many progress lines: $(cat "$tmp/err")"
grep -q "blk.0.ffn_down.weight: rows of 172 do not fit Q4_K blocks, written as F16" "$tmp/err" ||
    fail "no ffn_down fallback note: $(cat "$tmp/err")"
grep -q "^48 tensors, 36 in a fallback type" "$tmp/out" || fail "tensor count: $(cat "$tmp/out")"
grep -q "^size before: 1.12 MiB (32.00 bits per weight), file 1185376 bytes" "$tmp/out" ||
    fail "size before: $(cat "$tmp/out")"
grep -q "^size after:  0.28 MiB (7.92 bits per weight), file [0-9]* bytes" "$tmp/out" ||
    fail "size after: $(cat "$tmp/out")"
[ "$(stat -c %s "$tmp/q4km.gguf")" -lt "$(stat -c %s "$model")" ] || fail "not smaller"
story=$("$loom" run -m "$tmp/q4km.gguf" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)
[ "${#story}" -gt 40 ] || fail "loom run on the Q4_K_M file gave \"$story\""

# IQ4_XS: the 64-wide rows fall back to IQ4_NL (32-blocks), the 172-wide ffn_down to F16; and a
# MoE model in MXFP4_MOE (experts MXFP4, the rest Q8_0). Both generate text.
"$loom" quantize "$model" "$tmp/iq4xs.gguf" IQ4_XS >"$tmp/out" 2>"$tmp/err" ||
    fail "IQ4_XS: $(cat "$tmp/err")"
grep -q "blk.0.attn_q.weight: rows of 64 do not fit IQ4_XS blocks, written as IQ4_NL" "$tmp/err" ||
    fail "no IQ4_XS fallback note: $(cat "$tmp/err")"
story=$("$loom" run -m "$tmp/iq4xs.gguf" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)
[ "${#story}" -gt 40 ] || fail "loom run on the IQ4_XS file gave \"$story\""
moe="$fixtures/llama-moe/model.gguf"
"$loom" quantize "$moe" "$tmp/mxfp4.gguf" MXFP4_MOE >"$tmp/out" 2>"$tmp/err" ||
    fail "MXFP4_MOE: $(cat "$tmp/err")"
"$loom" gguf dump "$tmp/mxfp4.gguf" >"$tmp/dump"
grep -q "blk.0.ffn_up_exps.weight.*MXFP4" "$tmp/dump" || fail "experts not MXFP4: $(cat "$tmp/dump")"
grep -q "blk.0.attn_q.weight.*Q8_0" "$tmp/dump" || fail "attn_q not Q8_0: $(cat "$tmp/dump")"
"$loom" run -m "$tmp/mxfp4.gguf" -p "The cat" -n 8 --temp 0 >/dev/null 2>"$tmp/err" ||
    fail "loom run on the MXFP4_MOE file: $(cat "$tmp/err")"

# --pure through the command line: the same tensor data as llama-quantize --pure, at the same
# offsets. The headers differ in one vocabulary string, which llama-quantize cuts at its NUL byte
# (tests/engine/quantize/test_quantize.cpp checks that part); the data section starts at 22528.
src="$fixtures/llama-q-f32-source/model.gguf"
ref="$fixtures/llama-q-q8_0/model.gguf"
"$loom" quantize --pure "$src" "$tmp/q8.gguf" q8_0 >/dev/null 2>&1 || fail "--pure Q8_0"
[ "$(stat -c %s "$tmp/q8.gguf")" -eq "$(stat -c %s "$ref")" ] || fail "--pure Q8_0 size"
cmp -i 22528 "$tmp/q8.gguf" "$ref" || fail "--pure Q8_0 data differ from llama-quantize"

# expect_error DESCRIPTION PATTERN ARGS...: a non-zero exit whose stderr matches PATTERN.
expect_error() {
    local what="$1" pattern="$2"
    shift 2
    if "$loom" quantize "$@" >"$tmp/out" 2>"$tmp/err"; then fail "$what: exit 0"; fi
    grep -q -- "$pattern" "$tmp/err" || fail "$what: $(cat "$tmp/err")"
}
expect_error "unknown type" "unknown type 'Q7_X'; the types are Q4_0, Q4_1, .*Q4_K_M" \
    "$model" "$tmp/x.gguf" Q7_X
expect_error "missing input" "cannot open '$tmp/none.gguf'" "$tmp/none.gguf" "$tmp/x.gguf" Q8_0
echo "not a model" >"$tmp/junk.gguf"
expect_error "not GGUF" "junk.gguf" "$tmp/junk.gguf" "$tmp/x.gguf" Q8_0
expect_error "missing folder" "cannot write '$tmp/no/x.gguf'" "$model" "$tmp/no/x.gguf" Q8_0
cp "$model" "$tmp/same.gguf"
expect_error "output is input" "is the input file" "$tmp/same.gguf" "$tmp/same.gguf" Q8_0
expect_error "output is input" "is the input file" "$tmp/same.gguf" "$tmp/./same.gguf" Q8_0
cmp -s "$tmp/same.gguf" "$model" || fail "the input was changed"
if [ "$(id -u)" -ne 0 ]; then  # root may write anywhere
    mkdir "$tmp/ro" && chmod a-w "$tmp/ro"
    expect_error "read-only folder" "cannot write '$tmp/ro/x.gguf'" "$model" "$tmp/ro/x.gguf" Q8_0
fi
[ ! -e "$tmp/x.gguf" ] || fail "an output file was left behind"
! ls "$tmp" | grep -q '\.tmp\.' || fail "a temporary file was left behind"
echo "loom quantize: ok"
