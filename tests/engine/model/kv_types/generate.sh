#!/usr/bin/env bash
# Writes llama.cpp's logits for fixture models with a quantized KV cache (-ctk / -ctv alike,
# flash attention on), the last 8 positions of each fixture's prompt, float32 little-endian
# [8][n_vocab]: <fixture>.<type>.f32 beside this script. kv_types_tests.cpp compares Loom's
# against them. Run once by hand (needs ../shared/tools/llamacpp-ref installed); the outputs are
# committed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared="$here/../../../../../shared"
ref="$shared/tools/llamacpp-ref/llamacpp-ref.mjs"
keep=8
generate() {  # generate FIXTURE TYPE
    local case="$shared/fixtures/$1/case.json"
    local tokens n_ctx
    tokens=$(python3 -c "import json, sys; print(','.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" "$case")
    n_ctx=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['settings']['n_ctx'])" "$case")
    node "$ref" logits --model "$shared/fixtures/$1/model.gguf" --tokens "$tokens" --all \
        --bin "$here/$1.$2.all.f32" --kv "$2" --fa on --ctx "$n_ctx" \
        --batch "$(echo "$tokens" | tr ',' '\n' | wc -l)" --threads 2 >/dev/null
    python3 - "$here/$1.$2.all.f32" "$here/$1.$2.f32" "$keep" "$case" <<'PY'
import json, sys
src, dst, keep, case = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
n_vocab = json.load(open(case))["n_vocab"]
data = open(src, "rb").read()
open(dst, "wb").write(data[len(data) - keep * n_vocab * 4:])
PY
    rm "$here/$1.$2.all.f32"
}
for type in q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl; do generate llama-q-q8_0 "$type"; done
# Sliding-window layers beside full ones (an iSWA cache), soft-capping, head size 32.
for type in q8_0 q4_0; do generate gemma2 "$type"; done
