#!/usr/bin/env bash
# Prints the path of the model `make run` uses, and says on stderr which one and why:
#   1. MODEL (the first argument), when given;
#   2. ../shared/models/stories260K.gguf beside the repository, when present;
#   3. build/models/stories260K.gguf, downloaded once from Hugging Face (ggml-org/models) and
#      checked against its sha256;
#   4. build/models/synthetic-tiny.gguf, a small llama with random weights written by
#      `loom gguf synth` (it runs, but its text is noise).
# Usage: fetch_model.sh [MODEL] [LOOM]   (LOOM: the loom binary, for the last resort)
set -euo pipefail
repo_root="$(cd "$(dirname "$0")/.." && pwd)"
url="https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf"
sha256="270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
shared="$repo_root/../shared/models/stories260K.gguf"
cached="$repo_root/build/models/stories260K.gguf"
say() { echo "fetch_model: $*" >&2; }

if [ -n "${1:-}" ]; then
    [ -f "$1" ] || { say "MODEL=$1 does not exist"; exit 1; }
    say "using $1 (MODEL was given)"
    echo "$1"
    exit 0
fi
if [ -f "$shared" ]; then
    say "using $shared (no MODEL given; the shared copy is present)"
    echo "$shared"
    exit 0
fi
hash_ok() { echo "$sha256  $1" | sha256sum --check --status; }
if [ -f "$cached" ] && hash_ok "$cached"; then
    say "using $cached (downloaded earlier from $url)"
    echo "$cached"
    exit 0
fi

mkdir -p "$(dirname "$cached")"
say "no MODEL given and no $shared; downloading $url"
if curl -fsSL --connect-timeout 10 --max-time 120 -o "$cached.part" "$url" && hash_ok "$cached.part"; then
    mv "$cached.part" "$cached"
    say "using $cached (downloaded, sha256 checked)"
    echo "$cached"
    exit 0
fi
rm -f "$cached.part"
synthetic="$repo_root/build/models/synthetic-tiny.gguf"
if [ -n "${2:-}" ] && [ -x "$2" ]; then
    [ -f "$synthetic" ] || "$2" gguf synth "$synthetic" --type Q8_0 --n-vocab 512 --n-embd 256 \
        --n-layer 4 --n-head 8 --n-head-kv 4 --n-ff 768 >&2
    say "using $synthetic: no MODEL, no $shared, and the download of $url failed;"
    say "its weights are random, so expect noise (make run MODEL=path/to/model.gguf for a real one)"
    echo "$synthetic"
    exit 0
fi
say "no model. Tried: MODEL (not given); $shared (absent); downloading $url (failed, or its"
say "sha256 was not $sha256). Give one: make run MODEL=path/to/model.gguf"
exit 1
