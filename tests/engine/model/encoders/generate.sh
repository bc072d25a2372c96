#!/usr/bin/env bash
# Writes llama.cpp's embeddings of synthetic encoders (random weights, `loom gguf synth`) for
# encoder_tests.cpp: <case>.json beside this script, each with the synth arguments, the pooling,
# and llama-embedding's outputs for texts.txt (or pairs.txt for a reranker), unnormalised. The
# models are written again by the test from the same arguments. Run once by hand (needs
# llama-embedding: LLAMA_EMBEDDING=path, built from node-llama-cpp's source bundle with
# -DLLAMA_BUILD_EXAMPLES=ON; and a built loom, LOOM=path); the outputs are committed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vocab="$here/../../../../../shared/models/vocab/ggml-vocab-bert-bge.gguf"
loom=${LOOM:-$here/../../../../build/release/tools/loom/loom}
embedding=${LLAMA_EMBEDDING:-$HOME/.cache/loom-llamacpp/native/build/bin/llama-embedding}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

generate() {  # generate CASE POOLING TEXTS SYNTH-ARGS...
    local name=$1 pooling=$2 texts=$3
    shift 3
    "$loom" gguf synth --vocab "$vocab" --type F32 "$@" "$tmp/$name.gguf" >/dev/null
    # Flash attention off and no normalisation: llama.cpp's plain F32 path, raw vectors.
    # llama-embedding prints through a logging thread that now and then loses the end of its
    # output at exit: run again until the JSON is whole.
    local try
    for try in 1 2 3 4 5 6 7 8 9 10; do
        "$embedding" -m "$tmp/$name.gguf" -f "$here/$texts" --pooling "$pooling" \
            --embd-normalize -1 --embd-output-format json -t 2 -c 128 -fa off \
            >"$tmp/$name.out" 2>"$tmp/$name.err"
        python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/$name.out" 2>/dev/null && break
        [ "$try" != 10 ] || { echo "llama-embedding gave no whole JSON for $name" >&2; exit 1; }
    done
    python3 - "$tmp/$name.out" "$here/$name.json" "$pooling" "$texts" "$@" <<'PY'
import json, sys
out, dst, pooling, texts, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
vectors = [d["embedding"] for d in json.load(open(out))["data"]]
n_cls_out = int(args[args.index("--n-cls-out") + 1]) if "--n-cls-out" in args else 0
if pooling == "rank":  # llama-embedding prints n_embd values; the scores are the first ones
    vectors = [v[:max(n_cls_out, 1)] for v in vectors]
json.dump({"synth": args, "pooling": pooling, "texts": texts, "embeddings": vectors},
          open(dst, "w"), indent=None)
PY
}

bert=(--arch bert --n-embd 64 --n-layer 2 --n-head 4 --n-ff 96 --n-ctx 128 --std 0.1 --seed 11)
for pooling in none mean cls last; do generate "bert-$pooling" "$pooling" texts.txt "${bert[@]}"; done
nomic=(--arch nomic-bert --n-embd 96 --n-layer 2 --n-head 6 --n-ff 128 --n-ctx 128 --std 0.1 --seed 21)
for pooling in none mean; do generate "nomic-bert-$pooling" "$pooling" texts.txt "${nomic[@]}"; done
jina=(--arch jina-bert-v2 --n-embd 80 --n-layer 3 --n-head 5 --n-ff 112 --n-ctx 128 --std 0.1 --seed 31)
for pooling in none mean; do generate "jina-bert-v2-$pooling" "$pooling" texts.txt "${jina[@]}"; done
generate bert-rank rank pairs.txt --arch bert --n-embd 64 --n-layer 2 --n-head 4 --n-ff 96 \
    --n-ctx 128 --std 0.1 --seed 12 --pooling rank --n-cls-out 1
generate bert-rank3 rank pairs.txt --arch bert --n-embd 48 --n-layer 2 --n-head 3 --n-ff 80 \
    --n-ctx 128 --std 0.1 --seed 13 --pooling rank --n-cls-out 3
