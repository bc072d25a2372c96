# Sourced by the generate.sh scripts beside it (kv_types/, attention_order/), which write
# llama.cpp's logits for tests to compare with: where llamacpp-ref and loom are, and how the last
# rows of a logits file are kept.
model_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
shared="$model_dir/../../../../shared"
ref="$shared/tools/llamacpp-ref/llamacpp-ref.mjs"
loom=${LOOM:-$model_dir/../../../build/release/tools/loom/loom}

# keep_last_rows SRC DST ROWS N_VOCAB: the last ROWS rows of float32 [n][N_VOCAB] SRC into DST
keep_last_rows() {
    python3 - "$@" <<'PY'
import sys
src, dst, keep, n_vocab = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(src, "rb").read()
open(dst, "wb").write(data[len(data) - keep * n_vocab * 4:])
PY
}
