// fuzz/targets.h: a saved sequence file (engine/context/sequence_state.h) loaded into a context.
#include <cstdlib>
#include <span>

#include "engine/context/sequence_state.h"
#include "fuzz/targets.h"
#include "loom/error.h"

namespace loom::fuzz {

struct StateBase {
    std::unique_ptr<engine::Model> model;
};

std::shared_ptr<StateBase> load_state_base(const std::string &root) {
    auto base = std::make_shared<StateBase>();
    base->model =
        engine::Model::load(root + "/../shared/models/stories260K.gguf", {.progress = false});
    return base;
}

void sequence_state_one_input(const StateBase &base, const uint8_t *data, size_t size) {
    // A small context (so that files can have more cells than it holds) with another sequence
    // in it, which a load of sequence 0 must leave alone.
    engine::Context ctx(*base.model, {.n_ctx = 64, .n_threads = 1, .n_seq_max = 2});
    engine::Batch batch;
    for (engine::Pos p = 0; p < 3; ++p) batch.add(1 + p, p, 1, p == 2);
    ctx.decode(batch);
    try {
        engine::load_sequence(std::as_bytes(std::span(data, size)), "input", ctx, 0);
        // What was restored decodes on (or is refused as a full context).
        batch.clear();
        batch.add(1, ctx.memory().seq_pos_max(0) + 1, 0, true);
        ctx.decode(batch);
    } catch (const Error &) {
    }
    if (ctx.memory().seq_pos_max(1) != 2 || ctx.memory().seq_pos_min(1) != 0) std::abort();
}

}  // namespace loom::fuzz
