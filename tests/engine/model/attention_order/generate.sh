#!/usr/bin/env bash
# Writes llama.cpp's logits for the synthetic models of attention_order_tests.cpp (flash attention
# off, the KV cache in F32 and in F16), the last 8 positions of 40 tokens, float32 little-endian
# [8][n_vocab]: <shape>.<weights>.<kv>.f32 beside this script. Shapes none of the shared fixtures
# has: 3 query heads per KV head, and heads of 80 values (not a multiple of 32). Run once by hand
# (needs ../shared/tools/llamacpp-ref installed and a built loom, LOOM=path/to/loom); the outputs
# are committed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../llamacpp_ref.sh"
keep=8
n_vocab=1024
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# kTokens in attention_order_tests.cpp
tokens=124,330,517,977,527,665,883,978,108,908,231,919,618,639,572,433,805,589,563,865,751,798,789,505,772,794,603,454,248,5,631,85,116,297,839,103,463,14,837,915

generate() {  # generate NAME MODEL
    for kv in f32 f16; do
        node "$ref" logits --model "$2" --tokens "$tokens" --all --bin "$tmp/all.f32" --kv "$kv" \
            --fa off --ctx 256 --batch 40 --threads 2 >/dev/null
        keep_last_rows "$tmp/all.f32" "$here/$1.$kv.f32" "$keep" "$n_vocab"
    done
}

# kShapes in attention_order_tests.cpp
for type in Q4_0 Q6_K Q2_K Q5_K Q8_0; do
    "$loom" gguf synth --type "$type" --n-vocab "$n_vocab" --n-embd 768 --n-layer 2 --n-head 12 \
        --n-head-kv 4 --n-ff 1024 --seed 321 "$tmp/m.gguf" >/dev/null
    generate "gqa3.$type" "$tmp/m.gguf"
done
"$loom" gguf synth --type Q4_0 --n-vocab "$n_vocab" --n-embd 640 --n-layer 2 --n-head 8 \
    --n-head-kv 2 --n-ff 1024 --seed 77 "$tmp/m.gguf" >/dev/null
generate "head80.Q4_0" "$tmp/m.gguf"
