#!/usr/bin/env bash
# Remakes the references in this folder from llama.cpp (README.md says what they are):
#   1. the test suite writes the variants' GGUF files (tests/engine/model/fixture_variants.cpp)
#      into a folder it keeps ($LOOM_VARIANTS_DIR);
#   2. llama.cpp decodes the first 40 prompt tokens of each in one batch;
#   3. the rows of positions 4, 9, ..., 39 are kept, and each variant's largest difference from
#      llama.cpp's logits on the unchanged fixture model is printed.
# Needs a build (cmake --build build/release) and ../shared/tools/llamacpp-ref/install.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
fixtures="$root/../shared/fixtures"
ref="$root/../shared/tools/llamacpp-ref/llamacpp-ref.mjs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Without references yet the comparison fails; the files are written before it.
LOOM_VARIANTS_DIR="$work" "$root/build/release/tests/loom-engine-tests" \
    --gtest_filter='Fixtures/VariantParity.LogitsMatchLlamaCpp/*' >/dev/null || true

# name fixture, as in fixture_variants.cpp
variants="gemma2-swa3 gemma2
gemma2-swa16 gemma2
gemma2-swa-layers gemma2
gemma3-pattern2 gemma3
gemma3-no-window gemma3
deepseek2-temperature deepseek2-yarn
cohere2 command-r"

while read -r name fixture; do
    tokens=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['tokens'][:40])))" \
        "$fixtures/$fixture/case.json")
    node "$ref" logits --model "$work/$name.gguf" --tokens "$tokens" --all --bin "$work/$name.f32" \
        --ctx 256 --kv f32 --fa off --threads 2 >/dev/null
    python3 - "$work/$name.f32" "$here/$name.f32" "$fixtures/$fixture" "$name" <<'PY'
import json, struct, sys
src, dst, fixture, name = sys.argv[1:]
case = json.load(open(f"{fixture}/case.json"))
n_vocab = case["n_vocab"]
rows = range(4, 40, 5)
data = open(src, "rb").read()
assert len(data) == 40 * n_vocab * 4, "expected 40 rows"
kept = b"".join(data[p * n_vocab * 4:(p + 1) * n_vocab * 4] for p in rows)
open(dst, "wb").write(kept)
base = open(f"{fixture}/{case['logits_file']}", "rb").read()
worst = 0.0
for p in rows:
    a = struct.unpack_from(f"{n_vocab}f", data, p * n_vocab * 4)
    b = struct.unpack_from(f"{n_vocab}f", base, p * n_vocab * 4)
    worst = max(worst, max(abs(x - y) for x, y in zip(a, b)))
print(f"{name}: {len(rows)} rows, max |diff| from {case['case']}'s logits {worst:.4g}")
PY
done <<<"$variants"
