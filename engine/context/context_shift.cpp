#include "engine/context/context_shift.h"

#include "loom/error.h"

namespace loom::engine {

void require_context_shift(const Model &model, const char *command) {
    // Rotary and ALiBi positions are relative: moved tokens keep their distances.
    if (model.arch().positions != PositionEncoding::learned) return;
    fail(command,
         "--context-shift moves tokens to new positions, which needs relative positions (rotary "
         "or ALiBi); "
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
