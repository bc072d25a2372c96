// The op harness machinery: inputs, guarded memory, running a case and comparing it.
#include "tests/core/op_harness.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <ostream>
#include <sstream>

#include "loom/cpu.h"
#include "loom/fp16.h"

namespace loom::test {
namespace {

constexpr size_t kGuardBytes = 256;
constexpr std::byte kCanary{0xA5};
constexpr std::byte kUnwritten{0xFF};  // NaN in every float type, -1 in integers

// FNV-1a: a fixed seed per case name, so a case's inputs never depend on the table's order.
uint32_t seed_of(const std::string &name) {
    uint32_t h = 2166136261u;
    for (unsigned char ch : name) h = (h ^ ch) * 16777619u;
    return h;
}

bool is_metadata_op(Op op) {
    return op == Op::view || op == Op::reshape || op == Op::permute || op == Op::transpose;
}

// Every tensor of a graph that owns memory, moved into a region of its own with canary bytes
// on both sides. Leafs keep their contents; nodes start as kUnwritten so an element a kernel
// forgets to write shows up as NaN. Views are re-pointed at their moved source. Leafs that no
// node writes through a view (cpy, set_rows) must still hold their contents after compute.
class GuardedMemory {
  public:
    void relocate(const Graph &g) {
        std::vector<const Tensor *> written;
        for (const Tensor *t : g.node_list()) {
            if (t->view_src != nullptr && !is_metadata_op(t->op)) written.push_back(t->view_src);
        }
        for (Tensor *t : g.leaf_list()) {
            const bool read_only = std::find(written.begin(), written.end(), t) == written.end();
            move(t, /*keep=*/true, read_only);
        }
        for (Tensor *t : g.node_list()) move(t, /*keep=*/false, /*read_only=*/false);
        for (Tensor *t : g.leaf_list()) repoint(t);
        for (Tensor *t : g.node_list()) repoint(t);
    }

    std::vector<std::string> check() const {
        std::vector<std::string> errors;
        auto changed = [](std::byte b) { return b != kCanary; };
        for (const Region &r : regions_) {
            const std::byte *data = r.mem.data() + r.offset;
            const std::byte *end = data + r.bytes;
            const std::byte *guard_end = end + kGuardBytes;
            const std::byte *before = std::find_if(r.mem.data(), data, changed);
            const std::byte *after = std::find_if(end, guard_end, changed);
            const std::string what = describe(r.tensor) + " (" + op_name(r.tensor->op) + ")";
            if (before != data) {
                errors.push_back("guard bytes before " + what + " changed, as far as " +
                                 std::to_string(data - before) + " bytes before its start");
            }
            if (after != guard_end) {
                errors.push_back("guard bytes after " + what + " changed, the first at byte " +
                                 std::to_string(after - end) + " past its end");
            }
            if (!r.original.empty() && !std::equal(r.original.begin(), r.original.end(), data)) {
                errors.push_back("input " + what + " changed during compute");
            }
        }
        return errors;
    }

  private:
    struct Region {
        std::vector<std::byte> mem;  // guard, data at `offset` (64-byte aligned), guard
        size_t offset = 0;
        size_t bytes = 0;
        const Tensor *tensor = nullptr;
        std::vector<std::byte> original;  // a read-only leaf's contents
    };

    void move(Tensor *t, bool keep, bool read_only) {
        if (t->view_src != nullptr || t->data == nullptr) return;
        Region r;
        r.bytes = t->nbytes();
        r.tensor = t;
        if (r.bytes > (size_t(1) << 32)) throw Error("[test] too large to guard: " + describe(t));
        r.mem.assign(kGuardBytes + 64 + r.bytes + kGuardBytes, kCanary);
        const uintptr_t misalign = reinterpret_cast<uintptr_t>(r.mem.data() + kGuardBytes) % 64;
        r.offset = kGuardBytes + (misalign != 0 ? 64 - misalign : 0);
        std::byte *data = r.mem.data() + r.offset;
        if (keep) {
            const auto *src = static_cast<const std::byte *>(t->data);
            std::copy(src, src + r.bytes, data);
            if (read_only) r.original.assign(src, src + r.bytes);
        } else {
            std::fill(data, data + r.bytes, kUnwritten);
        }
        t->data = data;
        regions_.push_back(std::move(r));
    }

    static void repoint(Tensor *t) {
        if (t->view_src == nullptr) return;
        t->data = static_cast<std::byte *>(t->view_src->data) + t->view_offs;
    }

    std::vector<Region> regions_;
};

std::vector<uint8_t> raw_bytes(const Tensor *t) {
    const size_t size = traits(t->type).type_size;
    std::vector<uint8_t> out;
    out.reserve(size_t(t->nelements()) * size);
    for_each_index(shape_of(t), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const auto *p = static_cast<const uint8_t *>(t->element_ptr(i0, i1, i2, i3));
        out.insert(out.end(), p, p + size);
    });
    return out;
}

std::string index_tag(const Shape4 &ne, size_t flat) {
    int64_t i[4];
    for (int d = 0; d < 4; ++d) {
        i[d] = int64_t(flat) % ne[d];
        flat /= size_t(ne[d]);
    }
    return "[" + std::to_string(i[0]) + ", " + std::to_string(i[1]) + ", " + std::to_string(i[2]) +
           ", " + std::to_string(i[3]) + "]";
}

}  // namespace

// ---------------------------------------------------------------------------------------------

const char *layout_tag(Layout layout) {
    switch (layout) {
        case Layout::contiguous:
            return "";
        case Layout::permuted:
            return "_perm";
        case Layout::transposed:
            return "_trans";
        case Layout::strided:
            return "_strided";
    }
    return "";
}

std::string dtype_tag(DType type) {
    std::string tag = dtype_name(type);
    for (char &c : tag) c = char(std::tolower(static_cast<unsigned char>(c)));
    return tag;
}

std::string shape_tag(const Shape4 &ne) {
    return std::to_string(ne[0]) + "x" + std::to_string(ne[1]) + "x" + std::to_string(ne[2]) + "x" +
           std::to_string(ne[3]);
}

void CaseEnv::set(Tensor *x, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
    void *p = x->element_ptr(i0, i1, i2, i3);
    switch (x->type) {
        case DType::F32: {
            const auto f = float(v);
            std::memcpy(p, &f, sizeof f);
            break;
        }
        case DType::F16: {
            const uint16_t h = f32_to_fp16(float(v));
            std::memcpy(p, &h, sizeof h);
            break;
        }
        case DType::BF16: {
            const uint16_t h = f32_to_bf16(float(v));
            std::memcpy(p, &h, sizeof h);
            break;
        }
        case DType::I8:
            *static_cast<int8_t *>(p) = int8_t(v);
            break;
        case DType::I16: {
            const auto i = int16_t(v);
            std::memcpy(p, &i, sizeof i);
            break;
        }
        case DType::I32: {
            const auto i = int32_t(v);
            std::memcpy(p, &i, sizeof i);
            break;
        }
        case DType::I64: {
            const auto i = int64_t(v);
            std::memcpy(p, &i, sizeof i);
            break;
        }
        default:  // block formats have no single elements to set
            ADD_FAILURE() << "no element setter for " << dtype_name(x->type);
    }
}

void CaseEnv::fill_uniform(Tensor *x, double lo, double hi) {
    for_each_index(shape_of(x), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        set(x, i0, i1, i2, i3, uniform(lo, hi));
    });
}

std::vector<double> CaseEnv::permutation(int64_t n) {
    std::vector<double> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), 0.0);
    std::shuffle(v.begin(), v.end(), rng);
    return v;
}

Tensor *CaseEnv::input(DType type, const Shape4 &ne, Layout layout, double lo, double hi) {
    Tensor *x = nullptr;
    if (traits(type).is_quantized) {
        // A block format: uniform rows quantized by the format's reference quantizer.
        EXPECT_EQ(layout, Layout::contiguous) << "block formats are tested in contiguous rows";
        x = ctx.new_tensor(type, {ne[0], ne[1], ne[2], ne[3]});
        std::vector<float> row(static_cast<size_t>(ne[0]));
        for (int64_t r = 0; r < x->nrows(); ++r) {
            for (float &f : row) f = float(uniform(lo, hi));
            traits(type).from_float(row.data(), static_cast<char *>(x->data) + r * x->nb[1], ne[0]);
        }
        return keep(x);
    }
    switch (layout) {
        case Layout::contiguous:
            x = ctx.new_tensor(type, {ne[0], ne[1], ne[2], ne[3]});
            fill_uniform(x, lo, hi);
            return keep(x);
        case Layout::permuted:
            return permuted(type, ne, {0, 2, 1, 3}, lo, hi);
        case Layout::transposed:
            return permuted(type, ne, {1, 0, 2, 3}, lo, hi);
        case Layout::strided: {
            // Rows padded by 3 elements, planes by 2 rows, and an offset of 5 elements.
            Tensor *base = ctx.new_tensor(type, {ne[0] + 3, ne[1] + 2, ne[2], ne[3] + 1});
            fill_uniform(base, lo, hi);
            const size_t es = traits(type).type_size;
            x = view_4d(ctx, base, ne[0], ne[1], ne[2], ne[3], base->nb[1], base->nb[2],
                        base->nb[3], 5 * es);
            return keep(x);
        }
    }
    return nullptr;
}

Tensor *CaseEnv::permuted(DType type, const Shape4 &ne, const std::array<int, 4> &axes, double lo,
                          double hi) {
    // permute puts axis i of the base at axis axes[i] of the view: base dim i = ne[axes[i]].
    Tensor *base = ctx.new_tensor(type, {ne[axes[0]], ne[axes[1]], ne[axes[2]], ne[axes[3]]});
    fill_uniform(base, lo, hi);
    return keep(permute(ctx, base, axes[0], axes[1], axes[2], axes[3]));
}

Tensor *CaseEnv::values(DType type, const Shape4 &ne, const std::vector<double> &v) {
    Tensor *x = ctx.new_tensor(type, {ne[0], ne[1], ne[2], ne[3]});
    size_t i = 0;
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        set(x, i0, i1, i2, i3, v.at(i++));
    });
    return keep(x);
}

void PrintTo(const OpCase &c, std::ostream *os) {
    *os << c.name;
}

std::string case_name(const ::testing::TestParamInfo<OpCase> &info) {
    return info.param.name;
}

// ---------------------------------------------------------------------------------------------

void compute_on_cpu(const Graph &graph, int n_threads) {
    CpuBackend(n_threads).graph_compute(graph);
}

CaseResult run_case(const OpCase &c, int n_threads, bool with_reference) {
    CaseResult r;
    Context ctx({.mem_size = 16u << 20});
    CaseEnv env(ctx, seed_of(c.name));
    GuardedMemory guarded;
    try {
        Tensor *node = c.build(env);
        Tensor *check = env.check != nullptr ? env.check : node;
        Graph *graph = new_graph(ctx);
        build_forward_expand(graph, node);
        if (!graph->contains(check)) {
            r.error = "test bug: the checked tensor is not part of the graph";
            return r;
        }
        guarded.relocate(*graph);
        r.type = check->type;
        if (with_reference) {
            r.expected = Dense(shape_of(check), std::numeric_limits<double>::quiet_NaN());
            c.reference(env, r.expected);
            for (double &v : r.expected.v) v = round_to(check->type, v);
        }
        compute_on_cpu(*graph, n_threads);
        r.guard_errors = guarded.check();
        r.out = Dense(check);
        r.bytes = raw_bytes(check);
    } catch (const Error &e) {
        r.error = e.what();
    }
    return r;
}

void expect_matches_reference(const OpCase &c, int n_threads) {
    const CaseResult r = run_case(c, n_threads, /*with_reference=*/true);
    ASSERT_TRUE(r.error.empty()) << r.error;
    for (const std::string &g : r.guard_errors) ADD_FAILURE() << g;
    ASSERT_EQ(r.out.ne, r.expected.ne);
    const std::vector<double> &out = r.out.v, &ref = r.expected.v;

    std::ostringstream worst;  // the first few mismatching elements
    int n_shown = 0;
    auto show = [&](size_t i) {
        if (n_shown++ < 8) {
            worst << "\n  at " << index_tag(r.out.ne, i) << ": got " << out[i] << ", expected "
                  << ref[i];
        }
    };

    if (c.exact) {
        size_t n_diff = 0;
        for (size_t i = 0; i < out.size(); ++i) {
            if (out[i] != ref[i]) {
                ++n_diff;
                show(i);
            }
        }
        EXPECT_EQ(n_diff, 0u) << n_diff << " of " << out.size() << " elements differ"
                              << worst.str();
        return;
    }

    double num = 0.0, den = 0.0;
    size_t n_nan = 0, n_inf_mismatch = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_FALSE(std::isnan(ref[i]))
            << "test bug: reference left element " << index_tag(r.out.ne, i) << " unset";
        if (std::isnan(out[i])) {
            ++n_nan;
            show(i);
        } else if (std::isinf(ref[i]) || std::isinf(out[i])) {
            // Expected infinities (masks) must match exactly; they stay out of the sums.
            if (out[i] != ref[i]) {
                ++n_inf_mismatch;
                show(i);
            }
        } else {
            const double d = out[i] - ref[i];
            if (std::fabs(d) > 1e-3 * (1.0 + std::fabs(ref[i]))) show(i);
            num += d * d;
            den += ref[i] * ref[i];
        }
    }
    const double nmse = den > 0.0 ? num / den : num;
    std::ostringstream nmse_text;
    nmse_text << std::scientific << nmse;
    ::testing::Test::RecordProperty("nmse", nmse_text.str());
    EXPECT_EQ(n_nan, 0u) << n_nan << " NaN elements of " << out.size() << worst.str();
    EXPECT_EQ(n_inf_mismatch, 0u) << n_inf_mismatch << " infinities differ" << worst.str();
    EXPECT_LE(nmse, c.max_nmse) << "NMSE " << nmse << " over " << out.size() << " elements"
                                << worst.str();
}

TEST_P(OpTest, MatchesReference) {
    expect_matches_reference(GetParam(), 2);
}

std::vector<OpCase> all_cases() {
    std::vector<OpCase> all;
    for (auto table :
         {elementwise_cases, reduce_cases, layout_cases, matmul_cases, nn_cases, attention_cases}) {
        std::vector<OpCase> cases = table();
        all.insert(all.end(), cases.begin(), cases.end());
    }
    return all;
}

}  // namespace loom::test
