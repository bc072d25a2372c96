#pragma once
// The activation panel of the integer tiles whose weights come in 32-element blocks (Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, MXFP4, IQ4_NL): Q8_0 or Q8_1 activations laid out column by column within
// each block.
#include <cstring>

#include "core/isa.h"
#include "core/quant/legacy_formats.h"
#include "loom/fp16.h"

namespace loom::cpu::inline LOOM_ISA::qgemm::q8_0_panel {

constexpr int kBlock = quant::kLegacyBlock;
// Per block and column: the 32 quants, d_a, and -offset * sum(a) (Q8_1: s_a). The weights' codes
// are made unsigned by adding an offset (VPDPBUSD takes unsigned bytes); the last term takes it
// back out.
constexpr size_t kColumnBlock = kBlock + 4 + 4;

// Writes the Q8_0 blocks of one activation row `act` as column `slot` of a panel `w` columns wide.
template <int kOffset>
void prepare(const void *act, int64_t n_blocks, int w, int slot, std::byte *panel) {
    const auto *blocks = static_cast<const quant::BlockQ8_0 *>(act);
    for (int64_t b = 0; b < n_blocks; ++b) {
        std::byte *p = panel + size_t(b) * size_t(w) * kColumnBlock;
        std::memcpy(p + slot * kBlock, blocks[b].qs, kBlock);
        const float d = fp16_to_f32(blocks[b].d);
        int32_t sum = 0;
        for (int8_t q : blocks[b].qs) sum += q;
        const int32_t term = -kOffset * sum;
        std::memcpy(p + w * kBlock + slot * 4, &d, 4);
        std::memcpy(p + w * (kBlock + 4) + slot * 4, &term, 4);
    }
}

// The same for Q8_1 blocks (the columns of Q4_1 / Q5_1 weights): the term is s_a, the block's
// F16 d_a * sum(a), as a float.
inline void prepare_q8_1(const void *act, int64_t n_blocks, int w, int slot, std::byte *panel) {
    const auto *blocks = static_cast<const quant::BlockQ8_1 *>(act);
    for (int64_t b = 0; b < n_blocks; ++b) {
        std::byte *p = panel + size_t(b) * size_t(w) * kColumnBlock;
        std::memcpy(p + slot * kBlock, blocks[b].qs, kBlock);
        const float d = fp16_to_f32(blocks[b].d), s = fp16_to_f32(blocks[b].s);
        std::memcpy(p + w * kBlock + slot * 4, &d, 4);
        std::memcpy(p + w * (kBlock + 4) + slot * 4, &s, 4);
    }
}

}  // namespace loom::cpu::inline LOOM_ISA::qgemm::q8_0_panel
