#pragma once
// A sequence saved to a file with what resuming it needs (llama.cpp's session and slot files):
// the model it belongs to, its tokens, its KV cells (Context::save_seq), the sampler's generator
// and the last position's logits. A file of another model, another KV cache type or shape, a
// truncated or corrupt one is refused with a loom::Error("[state] <path>: ...") that says which.
#include <string>
#include <vector>

#include "engine/context/context.h"

namespace loom::engine {

struct SequenceState {
    std::vector<int32_t> tokens;  // what the sequence's cells hold, in order
    std::vector<float> logits;    // the last position's (n_vocab), or empty
    std::string rng;              // Sampler::rng_state(), or empty
};

// The model a file belongs to: the SHA-256 of its GGUF header (metadata and tensor directory:
// names, types, shapes, offsets), hex. Hashing the header, not the gigabytes of weights, keeps
// it instant; files with the same header and other weights pass as the same model.
std::string model_identity(const Model &model);

// Writes sequence seq of ctx with `state` to `path` (through a temporary name, renamed at the
// end, so an interrupted save leaves the old file).
void save_sequence(const std::string &path, Context &ctx, SeqId seq, const SequenceState &state);
// Restores sequence seq of ctx from `path` (what it held is replaced) and returns the rest.
// A refused file leaves the sequence as it was.
SequenceState load_sequence(const std::string &path, Context &ctx, SeqId seq);
// The same from bytes already read (`what` names them in messages): for tests and fuzzing.
SequenceState load_sequence(std::span<const std::byte> bytes, std::string_view what, Context &ctx,
                            SeqId seq);

// A file's contents read and checked against ctx without changing it, for a caller with checks
// of its own before the cells are placed (ctx.place_seq(seq, cells, what)).
struct SavedSequence {
    SequenceState state;
    Context::SavedSeq cells;
};
SavedSequence read_sequence(const std::string &path, const Context &ctx);
SavedSequence read_sequence(std::span<const std::byte> bytes, std::string_view what,
                            const Context &ctx);

}  // namespace loom::engine
