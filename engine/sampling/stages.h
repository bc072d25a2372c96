#pragma once
// The truncation and scaling stages of the sampler chain, each a small function over a
// candidate list. Each keeps at least one candidate of a non-empty list (llama.cpp's
// min_keep = 1) and leaves an empty list alone.
#include <cstdint>

#include "engine/sampling/candidates.h"

namespace loom::engine {

// Keeps the k most likely candidates (k clamped to the count), sorted. k <= 0: off.
void top_k(Candidates &candidates, int32_t k);

// Locally typical sampling: keeps the candidates whose surprise (-log p) is closest to the
// entropy, in that order, until their mass exceeds p. Leaves the list unsorted. p >= 1: off.
void typical(Candidates &candidates, float p);

// Nucleus sampling: keeps the shortest most-likely-first prefix whose mass reaches p. p >= 1: off.
void top_p(Candidates &candidates, float p);

// Keeps the candidates with probability >= p * (the largest probability); p > 1 acts as 1,
// keeping the ties at the top. p <= 0: off.
void min_p(Candidates &candidates, float p);

// Divides every logit by t (> 0). Division is monotonic, so a sorted list stays sorted.
void temperature(Candidates &candidates, float t);

}  // namespace loom::engine
