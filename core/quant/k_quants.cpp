#include "core/quant/quant.h"

namespace loom::quant {

// The K-quant formats (Q2_K ... Q6_K, Q8_K) are not implemented yet: their rows keep no
// conversions, so the builders reject them as weights.
void fill_k_traits(TraitsTable &) {}

}  // namespace loom::quant
