#!/usr/bin/env bash
# Writes llama.cpp's logits with a quantized KV cache (-ctk / -ctv alike, flash attention on),
# the last 8 positions of each prompt, float32 little-endian [8][n_vocab]: <model>.<type>.f32
# beside this script; kv_types_tests.cpp compares Loom's against them. The models: fixtures whose
# heads are one block (32 values), and a synthetic Llama with 128-value heads (four blocks a row)
# written by `loom gguf synth` with the shape kv_types_tests.cpp gives it. Run once by hand (needs
# ../shared/tools/llamacpp-ref installed and a built loom, LOOM=path/to/loom); the outputs are
# committed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../llamacpp_ref.sh"
keep=8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

generate() {  # generate NAME MODEL TOKENS N_CTX N_VOCAB TYPE
    local n
    n=$(echo "$3" | tr ',' '\n' | wc -l)
    node "$ref" logits --model "$2" --tokens "$3" --all --bin "$tmp/all.f32" --kv "$6" --fa on \
        --ctx "$4" --batch "$n" --threads 2 >/dev/null
    keep_last_rows "$tmp/all.f32" "$here/$1.$6.f32" "$keep" "$5"
}
fixture() {  # fixture NAME TYPE...
    local case="$shared/fixtures/$1/case.json" tokens n_ctx n_vocab name=$1
    shift
    tokens=$(python3 -c "import json, sys; print(','.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" "$case")
    n_ctx=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['settings']['n_ctx'])" "$case")
    n_vocab=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['n_vocab'])" "$case")
    for type in "$@"; do generate "$name" "$shared/fixtures/$name/model.gguf" "$tokens" "$n_ctx" "$n_vocab" "$type"; done
}

# Q4_0 weights: the fixture whose products Loom computes as llama.cpp does, to the bit.
fixture llama-q-q4_0 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl
# Sliding-window layers beside full ones (an iSWA cache), soft-capping.
fixture gemma2 q8_0 q4_0
# kSynthShape and kSynthTokens in kv_types_tests.cpp.
"$loom" gguf synth --type Q4_0 --n-vocab 512 --n-embd 256 --n-layer 2 --n-head 2 --n-head-kv 1 \
    --n-ff 512 --seed 7 "$tmp/synth.gguf" >/dev/null
tokens=1,300,45,211,97,402,13,260,388,77,150,501,6,333,289,41,199,420,58,312,270,95,444,120
for type in q8_0 q4_0 q5_1 iq4_nl; do generate synth-head128 "$tmp/synth.gguf" "$tokens" 256 512 "$type"; done
