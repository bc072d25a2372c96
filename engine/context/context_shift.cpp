#include "engine/context/context_shift.h"

#include "loom/error.h"

namespace loom::engine {

void require_context_shift(const Model &model, const char *command) {
    if (model.arch().positions == PositionEncoding::rope) return;
    fail(command,
         "--context-shift moves tokens to new positions, which needs rotary position embeddings; "
         "{} has learned ones",
         model.hparams().arch);
}

Pos shift_context(Memory &kv, SeqId seq, Pos n_past, Pos n_keep) {
    const Pos n_discard = (n_past - n_keep) / 2;
    kv.seq_rm(seq, n_keep, n_keep + n_discard);
    kv.seq_add(seq, n_keep + n_discard, n_past, -n_discard);
    return n_past - n_discard;
}

}  // namespace loom::engine
