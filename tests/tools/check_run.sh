#!/usr/bin/env bash
# `loom run` end to end on stories260K: the greedy story (prompt echoed, then the reference
# continuation from ../shared/models/MODELS.md), the timings on stderr, and the error paths
# (missing model, a prompt longer than the context) with a message and a non-zero exit.
# Usage: check_run.sh LOOM_BINARY REPO_ROOT
set -euo pipefail
loom="$1"
model="$2/../shared/models/stories260K.gguf"
[ -f "$model" ] || { echo "missing $model (../shared/models beside the repository)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$loom" run -m "$model" -p "Once upon a time" -n 20 --temp 0 >"$tmp/out" 2>"$tmp/err" ||
    fail "loom run exited non-zero: $(cat "$tmp/err")"
expected=" Once upon a time, there was a little girl named Lily."
[ "$(head -c ${#expected} "$tmp/out")" = "$expected" ] || fail "story: $(cat "$tmp/out")"
# The story tokenizes back to the reference ids (432 383 286 261 376 298 315 421 395 317 after the
# prompt); its leading space is the one the tokenizer puts back.
story=$(head -c ${#expected} "$tmp/out")
ids=$("$loom" tokenize -m "$model" -p "${story# }" --ids)
[ "$ids" = "[1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426]" ] ||
    fail "ids of the story: $ids"
grep -q "load time = .* ms" "$tmp/err" || fail "load time: $(cat "$tmp/err")"
grep -Eq "prompt eval time = .* ms / +5 tokens .* tokens per second" "$tmp/err" ||
    fail "prompt eval line: $(cat "$tmp/err")"
grep -Eq "eval time = .* ms / +19 runs .* ms per token, .* tokens per second" "$tmp/err" ||
    fail "eval line: $(cat "$tmp/err")"
grep -Eq "graphs = [0-9]+ built, [0-9]+ reused" "$tmp/err" || fail "graph line: $(cat "$tmp/err")"

# Seeded sampling is reproducible.
a=$("$loom" run -m "$model" -p "Once upon a time" -n 30 --seed 42 2>/dev/null)
b=$("$loom" run -m "$model" -p "Once upon a time" -n 30 --seed 42 2>/dev/null)
[ "$a" = "$b" ] || fail "--seed 42 gave two different stories"

expect_error() {  # expect_error PATTERN ARGS...: non-zero exit and PATTERN on stderr
    local pattern="$1" rc=0
    shift
    "$loom" run "$@" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" -ne 0 ] || fail "exit code 0 for: $*"
    grep -Eq "$pattern" "$tmp/err" || fail "message for $*: $(cat "$tmp/err")"
}
expect_error "^loom run: error: .*no-such-model.gguf" -m "$tmp/no-such-model.gguf" -p "Once"
expect_error "^loom run: error: \[run\] the prompt has [0-9]+ tokens, more than the context's 16" \
    -m "$model" -p "$(printf 'Once upon a time %.0s' 1 2 3 4 5 6)" -c 16
echo "loom run: story, timings and errors as expected"
