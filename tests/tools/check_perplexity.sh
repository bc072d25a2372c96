#!/usr/bin/env bash
# `loom perplexity` against llama-perplexity's figures on stories260K
# (../shared/fixtures/stories260K-perplexity: ctx 128, batch 128), the KL-divergence mode on a
# model and its Q8_0 quantization, and errors.
# Usage: check_perplexity.sh LOOM_BINARY REPO_ROOT
set -euo pipefail
loom="$1"
fixtures="$2/../shared/fixtures"
case_dir="$fixtures/stories260K-perplexity"
[ -f "$case_dir/case.json" ] || { echo "missing $case_dir (../shared beside the repository)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model="$case_dir/../../models/stories260K.gguf"

# Both of the fixture's runs: llama.cpp's defaults and the exact setting (KV f32, no flash
# attention). The issue asks for 1 %; every running value is held to 0.1 %.
check_run() {  # check_run RUN_INDEX LOOM_FLAGS...
    local run="$1"
    shift
    "$loom" perplexity -m "$model" -f "$case_dir/text.txt" -c 128 -b 128 -t 2 "$@" \
        >"$tmp/out.txt" 2>"$tmp/err.txt" || fail "exit code: $(cat "$tmp/err.txt")"
    python3 - "$case_dir/case.json" "$run" "$tmp/out.txt" <<'PY' || fail "run $run: $(cat "$tmp/out.txt")"
import json, re, sys
case = json.load(open(sys.argv[1]))["runs"][int(sys.argv[2])]
out = open(sys.argv[3]).read()
running = [float(x) for x in re.findall(r"\[\d+\]([0-9.]+),", out)]
want = case["running_ppl_per_chunk"]
assert len(running) == len(want), (running, want)
for got, ref in zip(running, want):
    assert abs(got - ref) <= 1e-3 * ref, (got, ref)
final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", out)
ppl, err = float(final.group(1)), float(final.group(2))
assert abs(ppl - case["ppl"]) <= 0.01 * case["ppl"], (ppl, case["ppl"])
assert abs(err - case["ppl_stderr"]) <= 0.01 * case["ppl_stderr"], (err, case["ppl_stderr"])
PY
}
check_run 0 --kv-type f16 --flash-attn on
check_run 1 --kv-type f32 --flash-attn off

# KL divergence: a model against itself is 0 with the same top token everywhere; its Q8_0
# version (same weights, quantized by llama-quantize) differs a little.
source_model="$fixtures/llama-q-f32-source/model.gguf"
"$loom" perplexity -m "$source_model" -f "$case_dir/text.txt" -c 64 --chunks 3 \
    --kl-divergence-base "$tmp/base.bin" >/dev/null 2>&1 || fail "saving the base"
"$loom" perplexity -m "$source_model" --kl-divergence-base "$tmp/base.bin" --kl-divergence \
    >"$tmp/self.txt" 2>/dev/null || fail "self comparison"
grep -q '^Mean KLD: 0.000000 ' "$tmp/self.txt" || fail "self KLD: $(cat "$tmp/self.txt")"
grep -q '^Same top token: 100.000 ' "$tmp/self.txt" || fail "self top: $(cat "$tmp/self.txt")"
"$loom" perplexity -m "$fixtures/llama-q-q8_0/model.gguf" --kl-divergence-base "$tmp/base.bin" \
    --kl-divergence >"$tmp/q8.txt" 2>/dev/null || fail "q8_0 comparison"
python3 - "$tmp/q8.txt" <<'PY' || fail "q8_0 KLD: $(cat "$tmp/q8.txt")"
import re, sys
out = open(sys.argv[1]).read()
kld = float(re.search(r"Mean KLD: ([0-9.]+)", out).group(1))
top = float(re.search(r"Same top token: ([0-9.]+)", out).group(1))
assert 0 < kld < 0.01, kld
assert 90 <= top <= 100, top
PY

expect_error() {  # expect_error PATTERN ARGS...
    local pattern="$1" rc=0
    shift
    "$loom" perplexity "$@" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" -ne 0 ] || fail "exit code 0 for: $*"
    grep -Eq -- "$pattern" "$tmp/err" || fail "message for $*: $(cat "$tmp/err")"
}
expect_error "has 2110 tokens, fewer than one chunk of 4096" -m "$model" -f "$case_dir/text.txt" \
    -c 4096
expect_error "--chunks 0 scores nothing" -m "$model" -f "$case_dir/text.txt" --chunks 0
expect_error "cannot read .*no-such-text" -m "$model" -f "$tmp/no-such-text"
expect_error "needs --kl-divergence-base" -m "$model" --kl-divergence
expect_error "not a logits file" -m "$model" --kl-divergence-base "$case_dir/text.txt" \
    --kl-divergence
expect_error "holds 3 chunks of 64 tokens over 1000 logits; the model has 512" -m "$model" \
    --kl-divergence-base "$tmp/base.bin" --kl-divergence
echo "loom perplexity: llama-perplexity's figures, KL divergence and errors as expected"
