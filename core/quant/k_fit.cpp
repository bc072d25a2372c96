// Scale fitting for the reference K-quantizers. Every expression keeps ggml's operand order and
// no multiply-add is fused: the bytes of a quantized file depend on each rounding. ggml runs these
// in ggml-base, built without FMA; GCC fuses a * b + c by default in C++, and with -march=native
// that alone changes bytes of every K-quant fixture, hence -ffp-contract=off for core/quant
// (CMakeLists.txt).
#include "core/quant/k_fit.h"

#include <algorithm>
#include <cmath>

#include "core/quant/k_blocks.h"
#include "loom/error.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

// Below this largest |x| a group counts as all zero (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

// The element of largest magnitude, with its sign (the first one on ties).
float signed_absmax(int n, const float *x, float &amax) {
    float max = 0;
    amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    return max;
}

int clamp_level(int l, int lo, int hi) {
    return std::max(lo, std::min(hi, l));
}

}  // namespace

float fit_symmetric(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = signed_absmax(n, x, amax);
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = int8_t(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {  // scales that map max to -(nmax +- 0.9) in steps of 0.1
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                L[i] = int8_t(nmax + clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float fit_symmetric_refined(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = signed_absmax(n, x, amax);
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    const float iscale = -nmax / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = int8_t(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    constexpr int kMaxPasses = 5;
    for (int pass = 0; pass < kMaxPasses; ++pass) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                const int new_l = clamp_level(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    // the fit's quality is sumlx^2 / suml2; compare without dividing
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = int8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float fit_with_min(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                   float &min_out, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;  // the offset only ever lowers the levels' zero
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        min_out = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = uint8_t(clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax));
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    uint8_t trial[32];  // levels of the scale under test; groups are 16 or 32 elements
    LOOM_ASSERT(n <= 32);
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax);
            trial[i] = uint8_t(l);
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        // weighted least squares for x ~ scale * l + min over these levels
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * trial[i] + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                error += weights[i] * diff;
            }
            if (error < best_error) {
                std::copy(trial, trial + n, L);
                best_error = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    min_out = -min;
    return scale;
}

}  // namespace loom::quant::inline LOOM_ISA
