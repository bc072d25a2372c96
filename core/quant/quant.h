#pragma once
// GGUF block formats: each family file fills its rows of the dtype traits table (to_float,
// the reference quantizer, vec_dot_type and the dot products).
#include <array>

#include "loom/tensor.h"

namespace loom::quant {

using TraitsTable = std::array<DTypeTraits, kDTypeCount>;

void fill_legacy_traits(TraitsTable &table);  // legacy.cpp: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1
void fill_k_traits(TraitsTable &table);       // k_quants.cpp: Q2_K ... Q6_K, Q8_K
void fill_lut4_traits(TraitsTable &table);    // lut4.cpp: MXFP4, IQ4_NL, IQ4_XS

}  // namespace loom::quant
