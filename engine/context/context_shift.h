#pragma once
// Room in a full context, as llama.cpp's --context-shift makes it: of a sequence's tokens after
// the first n_keep, the older half is removed and the rest moved back over it; seq_add re-rotates
// their K to the new positions, so only models with rotary positions can shift.

#include "engine/context/context.h"

namespace loom::engine {

// Throws loom::Error naming `command` when `model`'s positions cannot move.
void require_context_shift(const Model &model, const char *command);

// Shifts sequence `seq`, whose positions [0, n_past) are in use, keeping its first n_keep
// (n_keep < n_past - 1). Returns the positions in use after it.
Pos shift_context(Memory &kv, SeqId seq, Pos n_past, Pos n_keep);

}  // namespace loom::engine
