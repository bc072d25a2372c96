#pragma once
// F16 to float for the kernels of one instruction-set level: the same value as fp16_to_f32 (every
// half is a float), in one instruction where the level has F16C, where fp16_to_f32's bit
// twiddling took a third of a K-quant dot product's time.
#include <cstdint>

#include "core/isa.h"
#include "loom/fp16.h"

#if LOOM_X86_F16C
#include <immintrin.h>
#endif

namespace loom::quant::inline LOOM_ISA {

inline float half_to_float(uint16_t h) {
#if LOOM_X86_F16C
    return _cvtsh_ss(h);
#else
    return fp16_to_f32(h);
#endif
}

}  // namespace loom::quant::inline LOOM_ISA
