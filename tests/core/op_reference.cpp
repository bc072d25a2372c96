// Double-precision references for the op harness, written from the semantics in loom/core.h.
#include "tests/core/op_reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>

namespace loom::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// x rounded to `mant_bits` fraction bits, with exponents below min_exp treated as subnormal.
double round_mantissa(double x, int mant_bits, int min_exp) {
    if (!std::isfinite(x) || x == 0.0) return x;
    int e = 0;
    std::frexp(std::fabs(x), &e);  // |x| = m * 2^e, m in [0.5, 1): floor(log2 |x|) = e - 1
    const double quantum = std::ldexp(1.0, std::max(e - 1, min_exp) - mant_bits);
    return std::nearbyint(x / quantum) * quantum;  // default rounding mode: ties to even
}

}  // namespace

Shape4 shape_of(const Tensor *t) {
    return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
}

int64_t count(const Shape4 &ne) {
    return ne[0] * ne[1] * ne[2] * ne[3];
}

double half_to_double(uint16_t h) {
    const double sign = (h & 0x8000u) ? -1.0 : 1.0;
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    if (exponent == 0) return sign * std::ldexp(double(mantissa), -24);
    if (exponent == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * kInf;
    return sign * std::ldexp(double(1024 + mantissa), exponent - 25);
}

double bf16_to_double(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

double round_to(DType type, double x) {
    switch (type) {
        case DType::F32:
            return double(float(x));
        case DType::F16: {
            const double r = round_mantissa(x, 10, -14);
            return std::fabs(r) > 65504.0 ? std::copysign(kInf, r) : r;
        }
        case DType::BF16: {
            const double r = round_mantissa(x, 7, -126);
            return std::fabs(r) > 0x1.fep127 ? std::copysign(kInf, r) : r;
        }
        default:
            return x;
    }
}

double get(const Tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char *p = static_cast<const char *>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] +
                    i2 * t->nb[2] + i3 * t->nb[3];
    switch (t->type) {
        case DType::F32: {
            float f;
            std::memcpy(&f, p, sizeof f);
            return f;
        }
        case DType::F16:
        case DType::BF16: {
            uint16_t h;
            std::memcpy(&h, p, sizeof h);
            return t->type == DType::F16 ? half_to_double(h) : bf16_to_double(h);
        }
        case DType::I8:
            return double(*reinterpret_cast<const int8_t *>(p));
        case DType::I16: {
            int16_t v;
            std::memcpy(&v, p, sizeof v);
            return v;
        }
        case DType::I32: {
            int32_t v;
            std::memcpy(&v, p, sizeof v);
            return v;
        }
        case DType::I64: {
            int64_t v;
            std::memcpy(&v, p, sizeof v);
            return double(v);
        }
        default:
            break;
    }
    if (traits(t->type).is_quantized && t->nb[0] == traits(t->type).type_size) {
        // A block format: element i0 of its row expanded (the format's own reference
        // dequantizer, tested against llama.cpp's bytes in tests/quant).
        std::vector<float> row(static_cast<size_t>(t->ne[0]));
        traits(t->type).to_float(t->row_ptr(i1, i2, i3), row.data(), t->ne[0]);
        return row[size_t(i0)];
    }
    return std::numeric_limits<double>::quiet_NaN();  // fails any comparison
}

Dense::Dense(const Shape4 &shape, double value) : ne(shape), v(size_t(count(shape)), value) {}

Dense::Dense(const Tensor *t) : ne(shape_of(t)), v(size_t(count(ne))) {
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        at(i0, i1, i2, i3) = get(t, i0, i1, i2, i3);
    });
}

// ---------------------------------------------------------------------------------------------
// Scalar functions

double ref_round_to_half(double x) {
    if (x == 0.0 || !std::isfinite(x)) return x;
    int e;  // |x| = m 2^e, m in [0.5, 1)
    std::frexp(x, &e);
    // A half has 11 significant bits down to its smallest normal 2^-14 (e = -13); below that the
    // subnormals keep the spacing 2^-24. nearbyint rounds half to even.
    const double spacing = std::ldexp(1.0, std::max(e, -13) - 11);
    return std::nearbyint(x / spacing) * spacing;
}
double ref_gelu(double x) {
    if (x <= -10.0) return 0.0;
    if (x >= 10.0) return x;
    const double h = ref_round_to_half(x);
    const double c = std::sqrt(2.0 / std::numbers::pi);
    return ref_round_to_half(0.5 * h * (1.0 + std::tanh(c * (h + 0.044715 * h * h * h))));
}
double ref_sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}
double ref_silu(double x) {
    return x * ref_sigmoid(x);
}
double ref_softplus(double x) {
    return x > 20.0 ? x : std::log1p(std::exp(x));
}
double ref_relu(double x) {
    return x > 0.0 ? x : 0.0;
}

double ref_alibi_slope(double max_bias, int64_t h, int64_t n_head) {
    if (max_bias <= 0.0) return 1.0;
    // n: the largest power of two not above n_head. Heads below n get (2^(-8/n))^(h+1) scaled
    // by max_bias/8; the remaining heads take the odd powers of the halved base.
    int64_t n = 1;
    while (n * 2 <= n_head) n *= 2;
    if (h < n) return std::pow(2.0, -max_bias * double(h + 1) / double(n));
    return std::pow(2.0, -(max_bias / 2.0) * double(2 * (h - n) + 1) / double(n));
}

// ---------------------------------------------------------------------------------------------
// Elementwise and reductions

void ref_binary(BinaryOp op, const Tensor *a, const Tensor *b, Dense &out) {
    const Dense da(a), db(b);
    for_each_index(out.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const double x = da.at(i0, i1, i2, i3);
        const double y = db.at(i0 % db.ne[0], i1 % db.ne[1], i2 % db.ne[2], i3 % db.ne[3]);
        double r = 0.0;
        switch (op) {
            case BinaryOp::add:
                r = x + y;
                break;
            case BinaryOp::sub:
                r = x - y;
                break;
            case BinaryOp::mul:
                r = x * y;
                break;
            case BinaryOp::div:
                r = x / y;
                break;
        }
        out.at(i0, i1, i2, i3) = r;
    });
}

void ref_unary(const std::function<double(double)> &f, const Tensor *a, Dense &out) {
    const Dense da(a);
    for (size_t i = 0; i < da.v.size(); ++i) out.v[i] = f(da.v[i]);
}

void ref_gated(double (*act)(double), const Tensor *a, const Tensor *b, Dense &out) {
    const Dense da(a), db(b);
    for (size_t i = 0; i < da.v.size(); ++i) out.v[i] = act(da.v[i]) * db.v[i];
}

void ref_swiglu_oai(const Tensor *a, const Tensor *b, double alpha, double limit, Dense &out) {
    const Dense da(a), db(b);
    for (size_t i = 0; i < da.v.size(); ++i) {
        const double x = std::min(da.v[i], limit);
        const double y = std::clamp(db.v[i], -limit, limit);
        out.v[i] = x / (1.0 + std::exp(-alpha * x)) * (y + 1.0);
    }
}

void ref_sum_rows(const Tensor *a, bool mean, Dense &out) {
    const Dense da(a);
    for_each_index(out.ne, [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
        double s = 0.0;
        for (int64_t i0 = 0; i0 < da.ne[0]; ++i0) s += da.at(i0, i1, i2, i3);
        out.at(0, i1, i2, i3) = mean ? s / double(da.ne[0]) : s;
    });
}

void ref_argmax(const Tensor *a, Dense &out) {
    const Dense da(a);
    for (int64_t i1 = 0; i1 < da.ne[1]; ++i1) {
        int64_t best = 0;
        for (int64_t i0 = 1; i0 < da.ne[0]; ++i0) {
            if (da.at(i0, i1) > da.at(best, i1)) best = i0;  // strict: the first max wins
        }
        out.at(i1) = double(best);
    }
}

namespace {

// Indices of row (i1, i2, i3) of a, ordered by `before`, ties in index order.
std::vector<int64_t> sorted_row(const Dense &a, int64_t i1, int64_t i2, int64_t i3,
                                bool descending) {
    std::vector<int64_t> idx(size_t(a.ne[0]));
    std::iota(idx.begin(), idx.end(), int64_t(0));
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t x, int64_t y) {
        const double vx = a.at(x, i1, i2, i3), vy = a.at(y, i1, i2, i3);
        return descending ? vx > vy : vx < vy;
    });
    return idx;
}

}  // namespace

void ref_argsort(const Tensor *a, bool descending, Dense &out) {
    const Dense da(a);
    for_each_index({1, da.ne[1], da.ne[2], da.ne[3]},
                   [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
                       const std::vector<int64_t> idx = sorted_row(da, i1, i2, i3, descending);
                       for (int64_t i0 = 0; i0 < da.ne[0]; ++i0)
                           out.at(i0, i1, i2, i3) = double(idx[i0]);
                   });
}

void ref_top_k(const Tensor *a, int64_t k, Dense &out) {
    const Dense da(a);
    for_each_index(
        {1, da.ne[1], da.ne[2], da.ne[3]}, [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
            const std::vector<int64_t> idx = sorted_row(da, i1, i2, i3, /*descending=*/true);
            for (int64_t i0 = 0; i0 < k; ++i0) out.at(i0, i1, i2, i3) = double(idx[i0]);
        });
}

// ---------------------------------------------------------------------------------------------
// Data movement

void ref_repeat(const Tensor *a, Dense &out) {
    const Dense da(a);
    for_each_index(out.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        out.at(i0, i1, i2, i3) = da.at(i0 % da.ne[0], i1 % da.ne[1], i2 % da.ne[2], i3 % da.ne[3]);
    });
}

void ref_concat(const Tensor *a, const Tensor *b, int dim, Dense &out) {
    const Dense da(a), db(b);
    for_each_index(out.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        int64_t i[4] = {i0, i1, i2, i3};
        if (i[dim] < da.ne[dim]) {
            out.at(i0, i1, i2, i3) = da.at(i[0], i[1], i[2], i[3]);
        } else {
            i[dim] -= da.ne[dim];
            out.at(i0, i1, i2, i3) = db.at(i[0], i[1], i[2], i[3]);
        }
    });
}

void ref_pad(const Tensor *a, Dense &out) {
    const Dense da(a);
    for_each_index(out.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const bool inside = i0 < da.ne[0] && i1 < da.ne[1] && i2 < da.ne[2] && i3 < da.ne[3];
        out.at(i0, i1, i2, i3) = inside ? da.at(i0, i1, i2, i3) : 0.0;
    });
}

void ref_copy_flat(const Tensor *a, Dense &out) {
    out.v = Dense(a).v;
}

void ref_get_rows(const Tensor *a, const Tensor *idx, Dense &out) {
    const Dense da(a), di(idx);
    for_each_index(out.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const auto row = int64_t(di.at(i1, i2, i3));
        out.at(i0, i1, i2, i3) = da.at(i0, row, i2, i3);
    });
}

void ref_set_rows(const Tensor *dst, const Tensor *b, const Tensor *idx, Dense &out) {
    out = Dense(dst);
    const Dense db(b), di(idx);
    for_each_index({1, db.ne[1], db.ne[2], db.ne[3]},
                   [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
                       const auto row = int64_t(di.at(i1, i2 % di.ne[1], i3 % di.ne[2]));
                       for (int64_t i0 = 0; i0 < db.ne[0]; ++i0)
                           out.at(i0, row, i2, i3) = db.at(i0, i1, i2, i3);
                   });
}

// ---------------------------------------------------------------------------------------------
// Matrix products

void ref_mul_mat(const Tensor *a, const Tensor *b, Dense &out) {
    const Dense da(a), db(b);
    const int64_t K = da.ne[0];
    const int64_t r2 = db.ne[2] / da.ne[2], r3 = db.ne[3] / da.ne[3];
    for_each_index(out.ne, [&](int64_t m, int64_t n, int64_t i2, int64_t i3) {
        const double *ar = &da.v[da.index(0, m, i2 / r2, i3 / r3)];
        const double *br = &db.v[db.index(0, n, i2, i3)];
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k) s += ar[k] * br[k];
        out.at(m, n, i2, i3) = s;
    });
}

void ref_mul_mat_id(const Tensor *as, const Tensor *b, const Tensor *ids, Dense &out) {
    const Dense da(as), db(b), di(ids);
    for_each_index(out.ne, [&](int64_t m, int64_t slot, int64_t tok, int64_t) {
        const auto expert = int64_t(di.at(slot, tok));
        const int64_t b1 = db.ne[1] == 1 ? 0 : slot;
        double s = 0.0;
        for (int64_t k = 0; k < da.ne[0]; ++k) s += da.at(k, m, expert) * db.at(k, b1, tok);
        out.at(m, slot, tok) = s;
    });
}

// ---------------------------------------------------------------------------------------------
// Normalisation and position

void ref_norm(const Tensor *a, double eps, bool rms, Dense &out) {
    const Dense da(a);
    const int64_t n = da.ne[0];
    for_each_index({1, da.ne[1], da.ne[2], da.ne[3]},
                   [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
                       double mean = 0.0;
                       if (!rms) {
                           for (int64_t i0 = 0; i0 < n; ++i0) mean += da.at(i0, i1, i2, i3);
                           mean /= double(n);
                       }
                       double sq = 0.0;
                       for (int64_t i0 = 0; i0 < n; ++i0) {
                           const double d = da.at(i0, i1, i2, i3) - mean;
                           sq += d * d;
                       }
                       const double inv = 1.0 / std::sqrt(sq / double(n) + eps);
                       for (int64_t i0 = 0; i0 < n; ++i0) {
                           out.at(i0, i1, i2, i3) = (da.at(i0, i1, i2, i3) - mean) * inv;
                       }
                   });
}

void ref_rope(const Tensor *a, const Tensor *pos, const Tensor *freq_factors, const RopeParams &p,
              Dense &out) {
    const Dense da(a);
    out = da;  // dims from n_dims on pass through
    const int64_t n_dims = p.n_dims;
    const double base = p.freq_base;
    const double theta_scale = std::pow(base, -2.0 / double(n_dims));
    auto corr_dim = [&](double n_rot) {
        return double(n_dims) * std::log(double(p.n_ctx_orig) / (n_rot * 2.0 * std::numbers::pi)) /
               (2.0 * std::log(base));
    };
    const double low = std::max(0.0, std::floor(corr_dim(p.beta_fast)));
    const double high = std::min(double(n_dims - 1), std::ceil(corr_dim(p.beta_slow)));
    const bool neox = p.mode == RopeMode::neox;

    for_each_index(
        {1, da.ne[1], da.ne[2], da.ne[3]}, [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
            const double position = get(pos, i2);
            for (int64_t i0 = 0; i0 < n_dims; i0 += 2) {
                const int64_t pair = i0 / 2;
                const double ff = freq_factors ? get(freq_factors, pair) : 1.0;
                const double theta_extrap = position * std::pow(theta_scale, double(pair)) / ff;
                const double theta_interp = p.freq_scale * theta_extrap;
                double theta = theta_interp;
                double mscale = p.attn_factor;
                if (p.ext_factor != 0.0f) {
                    const double y = (double(pair) - low) / std::max(0.001, high - low);
                    const double ramp = (1.0 - std::clamp(y, 0.0, 1.0)) * p.ext_factor;
                    theta = theta_interp * (1.0 - ramp) + theta_extrap * ramp;
                    mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
                }
                const double c = std::cos(theta) * mscale, s = std::sin(theta) * mscale;
                const int64_t j0 = neox ? pair : i0;
                const int64_t j1 = neox ? pair + n_dims / 2 : i0 + 1;
                const double x0 = da.at(j0, i1, i2, i3), x1 = da.at(j1, i1, i2, i3);
                out.at(j0, i1, i2, i3) = x0 * c - x1 * s;
                out.at(j1, i1, i2, i3) = x0 * s + x1 * c;
            }
        });
}

void ref_hadamard(const Tensor *a, int64_t n, Dense &out) {
    const Dense da(a);
    out = da;
    const double scale = 1.0 / std::sqrt(double(n));
    for_each_index({1, da.ne[1], da.ne[2], da.ne[3]},
                   [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
                       for (int64_t b = 0; b < da.ne[0]; b += n) {
                           for (int64_t i = 0; i < n; ++i) {
                               double sum = 0.0;
                               for (int64_t j = 0; j < n; ++j) {
                                   const double sign = std::popcount(uint64_t(i & j)) % 2 ? -1 : 1;
                                   sum += sign * da.at(b + j, i1, i2, i3);
                               }
                               out.at(b + i, i1, i2, i3) = sum * scale;
                           }
                       }
                   });
}

// ---------------------------------------------------------------------------------------------
// Attention

namespace {

// Softmax of logits with an optional sink logit counted in the sum but not output.
void softmax_in_place(std::vector<double> &x, const double *sink) {
    double max = sink ? *sink : -kInf;
    for (double v : x) max = std::max(max, v);
    double sum = sink ? std::exp(*sink - max) : 0.0;
    for (double &v : x) {
        v = v == -kInf ? 0.0 : std::exp(v - max);
        sum += v;
    }
    for (double &v : x) v /= sum;
}

}  // namespace

void ref_soft_max(const Tensor *a, const Tensor *mask, double scale, double max_bias,
                  const Tensor *sinks, Dense &out) {
    const Dense da(a);
    const int64_t n_head = da.ne[2];
    std::vector<double> row(size_t(da.ne[0]));
    for_each_index({1, da.ne[1], da.ne[2], da.ne[3]},
                   [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
                       const double slope = ref_alibi_slope(max_bias, i2, n_head);
                       for (int64_t i0 = 0; i0 < da.ne[0]; ++i0) {
                           double x = da.at(i0, i1, i2, i3) * scale;
                           if (mask)
                               x += slope * get(mask, i0, i1, i2 % mask->ne[2], i3 % mask->ne[3]);
                           row[size_t(i0)] = x;
                       }
                       const double sink = sinks ? get(sinks, i2) : 0.0;
                       softmax_in_place(row, sinks ? &sink : nullptr);
                       for (int64_t i0 = 0; i0 < da.ne[0]; ++i0)
                           out.at(i0, i1, i2, i3) = row[size_t(i0)];
                   });
}

void ref_diag_mask_inf(const Tensor *a, int64_t n_past, Dense &out) {
    out = Dense(a);
    for_each_index(out.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        if (i0 > n_past + i1) out.at(i0, i1, i2, i3) = -kInf;
    });
}

void ref_flash_attn(const Tensor *q, const Tensor *k, const Tensor *v, const Tensor *mask,
                    const Tensor *sinks, const RefAttnParams &p, Dense &out) {
    const Dense dq(q), dk(k), dv(v);
    const int64_t D = dq.ne[0], n_q = dq.ne[1], n_head = dq.ne[2];
    const int64_t Dv = dv.ne[0], n_kv = dk.ne[1];
    const int64_t group = n_head / dk.ne[2], r3 = dq.ne[3] / dk.ne[3];
    std::vector<double> scores(static_cast<size_t>(n_kv));
    for (int64_t i3 = 0; i3 < dq.ne[3]; ++i3) {
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t hk = h / group, k3 = i3 / r3;
            const double slope = ref_alibi_slope(p.max_bias, h, n_head);
            for (int64_t iq = 0; iq < n_q; ++iq) {
                for (int64_t j = 0; j < n_kv; ++j) {
                    double s = 0.0;
                    for (int64_t d = 0; d < D; ++d) s += dq.at(d, iq, h, i3) * dk.at(d, j, hk, k3);
                    s *= p.scale;
                    if (p.softcap != 0.0) s = p.softcap * std::tanh(s / p.softcap);
                    if (mask) s += slope * get(mask, j, iq, h % mask->ne[2], i3 % mask->ne[3]);
                    scores[size_t(j)] = s;
                }
                const double sink = sinks ? get(sinks, h) : 0.0;
                softmax_in_place(scores, sinks ? &sink : nullptr);
                for (int64_t d = 0; d < Dv; ++d) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < n_kv; ++j)
                        acc += scores[size_t(j)] * dv.at(d, j, hk, k3);
                    out.at(d, h, iq, i3) = acc;
                }
            }
        }
    }
}

}  // namespace loom::test
