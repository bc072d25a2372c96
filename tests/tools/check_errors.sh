#!/usr/bin/env bash
# The errors a user meets first, collected: each gives a non-zero exit and a message that names
# what is wrong and what would be right. A bad path, a file that is not a GGUF, an architecture
# Loom lacks (listing the ones it has), a tensor type it lacks (naming the tensor), an unknown
# tensor type id, a context larger than the machine's memory (how much, and what is there), and
# a context shift asked of a model with learned positions.
# Usage: check_errors.sh LOOM_BINARY REPO_ROOT
source "$(dirname "$0")/stories_test_setup.sh"

expect_error() {  # expect_error PATTERN COMMAND...: non-zero exit, PATTERN (grep -E) on stderr
    local pattern="$1" rc=0
    shift
    "$loom" "$@" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" -ne 0 ] || fail "exit code 0 for: $*"
    grep -Eq "$pattern" "$tmp/err" || fail "message for $*: $(cat "$tmp/err")"
}

# Copies of stories260K with one field changed: the architecture's name (same length), or the
# type of the first tensor.
python3 - "$model" "$tmp" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
at = data.find(b"llama", data.find(b"general.architecture") + len(b"general.architecture"))
arch = bytearray(data)
arch[at:at + 5] = b"mamba"
open(sys.argv[2] + "/arch.gguf", "wb").write(arch)
name = b"token_embd.weight"
info = data.find(name) + len(name)
n_dims = struct.unpack_from("<I", data, info)[0]
for type_id, out in ((16, "iq2_xxs.gguf"), (99, "type99.gguf")):
    patched = bytearray(data)
    struct.pack_into("<I", patched, info + 4 + 8 * n_dims, type_id)
    open(sys.argv[2] + "/" + out, "wb").write(patched)
PY
echo "not a model" >"$tmp/text.gguf"

expect_error "^loom run: error: \[gguf\] cannot open '$tmp/none.gguf': No such file or directory" \
    run -m "$tmp/none.gguf" -p "Once"
expect_error "^loom run: error: \[gguf\] $tmp/text.gguf: .*bad magic .*a GGUF file starts with 'GGUF'" \
    run -m "$tmp/text.gguf" -p "Once"
expect_error "architecture 'mamba' is not supported \(supported: llama, .*gpt2.*\)" \
    run -m "$tmp/arch.gguf" -p "Once"
expect_error "tensor 0 'token_embd.weight' .*tensor type IQ2_XXS \(GGUF type id 16\) is not supported" \
    run -m "$tmp/iq2_xxs.gguf" -p "Once"
expect_error "tensor 0 'token_embd.weight' .*unknown tensor type id 99" \
    run -m "$tmp/type99.gguf" -p "Once"
expect_error "\[kv\] a KV cache of 1000000000 cells needs [0-9.]+ GiB of memory and [0-9.]+ GiB is available" \
    bench -m "$model" -p 1000000000 -n 0 -r 1
gpt2="$2/../shared/fixtures/gpt2/model.gguf"
expect_error "context-shift moves tokens to new positions, which needs relative positions \(rotary or ALiBi\); gpt2" \
    run -m "$gpt2" -p "Once" --context-shift
expect_error "context-shift moves tokens to new positions, which needs relative positions \(rotary or ALiBi\); gpt2" \
    serve -m "$gpt2" --port 0 --context-shift
echo "errors: each names what is wrong, as expected"
