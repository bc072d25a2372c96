#pragma once
// GGUF block formats: each family file fills its rows of the dtype traits table (to_float,
// the reference quantizer, vec_dot_type and the dot products).
#include <array>

#include "core/isa.h"
#include "loom/tensor.h"

namespace loom::quant::inline LOOM_ISA {

// A row's bytes seen as its blocks.
template <typename Block>
const Block *blocks(const void *p) {
    return static_cast<const Block *>(p);
}
template <typename Block>
Block *blocks(void *p) {
    return static_cast<Block *>(p);
}

using TraitsTable = std::array<DTypeTraits, kDTypeCount>;

void fill_legacy_traits(TraitsTable &table);  // legacy.cpp: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1
void fill_k_traits(TraitsTable &table);       // k_quants.cpp: Q2_K ... Q6_K, Q8_K
void fill_lut4_traits(TraitsTable &table);    // lut4.cpp: MXFP4, IQ4_NL, IQ4_XS

// This level's whole table (traits_table.cpp); loom::traits() reads the selected level's.
const TraitsTable &traits_table();

}  // namespace loom::quant::inline LOOM_ISA
