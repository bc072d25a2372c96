#!/usr/bin/env bash
# `loom logits` end to end on stories260K: the file's size, its argmax against `loom run`'s greedy
# pick, a --batched run against single-sequence runs (bit for bit), --dump-tensors, and the error
# paths.
# Usage: check_logits.sh LOOM_BINARY REPO_ROOT
source "$(dirname "$0")/stories_test_setup.sh"
n_vocab=512
row_bytes=$((n_vocab * 4))

# argmax FILE ROW: the index of the largest float32 in row ROW of FILE.
argmax() {
    od -An -v -tf4 -w4 -j $(($2 * row_bytes)) -N $row_bytes "$1" |
        awk 'NR == 1 || $1 + 0 > best { best = $1 + 0; id = NR - 1 } END { print id }'
}

"$loom" logits -m "$model" --tokens 1,403,407 --all --out "$tmp/all.bin" >/dev/null
[ "$(stat -c %s "$tmp/all.bin")" -eq $((3 * row_bytes)) ] || fail "--all size"
# Greedy `loom run` after "Once upon" ([1, 403, 407]) picks the last row's argmax.
pick=$(argmax "$tmp/all.bin" 2)
story=$("$loom" run -m "$model" -p "Once upon" -n 1 --temp 0 --kv-type f32 2>/dev/null)
ids=$("$loom" tokenize -m "$model" -p "${story# }" --ids)
[ "$ids" = "[1, 403, 407, $pick]" ] || fail "argmax $pick, loom run gave \"$story\" = $ids"
# The reference's first pick after "Once upon a time" (MODELS.md).
"$loom" logits -m "$model" --tokens 1,403,407,261,378 --out "$tmp/last.bin" >/dev/null
[ "$(stat -c %s "$tmp/last.bin")" -eq $row_bytes ] || fail "last-row size"
[ "$(argmax "$tmp/last.bin" 0)" -eq 432 ] || fail "argmax after the prompt"

# Two sequences in one batch: each row equals that sequence decoded alone, bit for bit.
"$loom" logits -m "$model" --batched --tokens 1,403,407,261,378,432 --tokens 1,403,407,261,378 \
    --out "$tmp/batched.bin" >/dev/null
[ "$(stat -c %s "$tmp/batched.bin")" -eq $((2 * row_bytes)) ] || fail "--batched size"
"$loom" logits -m "$model" --tokens 1,403,407,261,378,432 --out "$tmp/first.bin" >/dev/null
cmp -s <(head -c $row_bytes "$tmp/batched.bin") "$tmp/first.bin" || fail "batched row 0"
cmp -s <(tail -c $row_bytes "$tmp/batched.bin") "$tmp/last.bin" || fail "batched row 1"
"$loom" logits -m "$model" --tokens 1,403,407 --out "$tmp/single.bin" >/dev/null
cmp -s <(tail -c $row_bytes "$tmp/all.bin") "$tmp/single.bin" || fail "--all last row"

# --dump-tensors: the graph's last node is the logits themselves, written as they are.
"$loom" logits -m "$model" --tokens 1,403,407 --all --out "$tmp/dumped.bin" \
    --dump-tensors "$tmp/dump" >/dev/null
grep -qx "result_output.mul_mat $n_vocab 3 1 1" "$tmp/dump/index.txt" || fail "dump index"
cmp -s "$tmp/dump/result_output.mul_mat.f32" "$tmp/dumped.bin" || fail "dumped logits"

# --flash-attn: `auto` is flash attention on; off (this command's default) is another path
# whose logits differ in their last bits.
for fa in on auto; do
    "$loom" logits -m "$model" --tokens 1,403,407 --all --flash-attn $fa --out "$tmp/fa-$fa.bin" \
        >/dev/null
done
cmp -s "$tmp/fa-on.bin" "$tmp/fa-auto.bin" || fail "--flash-attn auto is not on"
! cmp -s "$tmp/fa-on.bin" "$tmp/all.bin" || fail "--flash-attn on gave the logits of off"

expect_error() {  # expect_error PATTERN ARGS...: non-zero exit and PATTERN on stderr
    local pattern="$1" rc=0
    shift
    "$loom" logits "$@" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" -ne 0 ] || fail "exit code 0 for: $*"
    grep -Eq "$pattern" "$tmp/err" || fail "message for $*: $(cat "$tmp/err")"
}
expect_error "^loom logits: error: \[logits\] token id 99999 is outside the vocabulary \(0\.\.511\)" \
    -m "$model" --tokens 1,99999 --out "$tmp/x.bin"
expect_error "^loom logits: error: .*no-such-model.gguf" \
    -m "$tmp/no-such-model.gguf" --tokens 1 --out "$tmp/x.bin"
expect_error "^loom logits: error: \[logits\] cannot open .* for writing" \
    -m "$model" --tokens 1 --out "$tmp/no-such-dir/x.bin"
expect_error "^loom logits: error: \[logits\] .*not a token id" -m "$model" --tokens 1,x --out "$tmp/x.bin"
expect_error "^--flash-attn: yes not in \{on,off,auto\}" -m "$model" --tokens 1 \
    --flash-attn yes --out "$tmp/x.bin"
echo "loom logits: sizes, argmax, batched rows and errors as expected"
