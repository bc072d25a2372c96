#pragma once
// Fitting a scale (and a min) to a group of floats: the searches ggml's reference K-quantizers
// run per sub-block, with the same float operations in the same order, so the chosen integers
// match llama-quantize's byte for byte.
#include <cstdint>

#include "core/isa.h"

namespace loom::quant::inline LOOM_ISA {

// Symmetric levels -nmax .. nmax-1 weighted by x^2 (ggml's make_qx_quants, rmse_type 1, no
// importance): starts from the scale that maps the largest |x| to -nmax, tries 18 nearby scales
// and keeps the least-squares one. L gets level + nmax; returns the scale.
float fit_symmetric(int n, int nmax, const float *x, int8_t *L);

// Symmetric levels -nmax .. nmax-1 weighted by x^2, refined by moving single levels while the
// weighted fit improves (ggml's make_q3_quants with rmse). L gets level + nmax; returns the scale.
float fit_symmetric_refined(int n, int nmax, const float *x, int8_t *L);

// Levels 0 .. nmax with an offset: x ~ scale * L - min, min >= 0 (ggml's make_qkx2_quants).
// Tries nstep + 1 scales (rmin + rdelta * is + nmax) / (max - min), each with the weighted
// least-squares scale and min for its levels, keeping the one of least weighted error (absolute
// when use_mad, else squared). Returns the scale; min_out gets the min.
float fit_with_min(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                   float &min_out, float rmin, float rdelta, int nstep, bool use_mad);

}  // namespace loom::quant::inline LOOM_ISA
