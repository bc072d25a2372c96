// The repacked weight layout (core/cpu/repack.h) and the buffer type that stores it.
#include "core/cpu/repack.h"

#include <array>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "loom/backend.h"
#include "loom/cpu.h"
#include "loom/error.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

// One field of a block: `size` bytes at byte `offset`, interleaved across the 16 rows in units
// of `unit` bytes, each byte XORed with `flip`; a 4-byte `high_bits` field (Q5_0 / Q5_1's qh)
// also has its bits reordered by spread_high_bits.
struct Field {
    int offset, size, unit;
    uint8_t flip = 0;
    bool high_bits = false;
};

// The fifth bits of a Q5 block, bit e for element e, reordered for the integer tile: element e
// of half h = e / 16, unit t = e % 16 / 4, byte i = e % 4 goes to bit 8i + 4h + t. Shifting the
// word left by 4 - t (half 0) or right by t (half 1) then puts the bits of unit t's four elements
// at bit 4 of their bytes, where the low nibbles' fifth bit belongs (core/cpu/qgemm_legacy.cpp).
uint32_t spread_high_bits(uint32_t qh, bool to_repacked) {
    uint32_t out = 0;
    for (int e = 0; e < 32; ++e) {
        const int moved = 8 * (e % 4) + 4 * (e / 16) + e % 16 / 4;
        const int from = to_repacked ? e : moved, to = to_repacked ? moved : e;
        out |= ((qh >> from) & 1u) << to;
    }
    return out;
}

// `size` bytes at byte `from` of a group block as the interleaved fields lay it out.
struct Piece {
    int from, size;
};
// Q6_K's: its scales, its d, and per lane and half two ql units and a qh unit.
constexpr int kMaxPieces = 2 + 8 * 2 * 3;

struct Layout {
    int n_fields = 0;
    std::array<Field, 5> fields{};
    // Where given, the group block is these pieces of the interleaved one, in this order.
    int n_pieces = 0;
    std::array<Piece, kMaxPieces> pieces{};
};

// Q6_K's group block in the order the generation tile reads it (core/cpu/qgemm_k.cpp): the scales
// and d first, then lane after lane (u, ggml's elements 4u .. 4u + 3 of every 32) and per half h
// the ql unit of chunks 4h, 4h + 2, the qh unit their high bits come from and the ql unit of chunks
// 4h + 1, 4h + 3. Read in ascending order, the weights stream faster than in field order, where
// each block jumps between three regions: 1.57x on two threads of a Zen 5 for half-major order
// (32.9 against 21.0 GB/s), and lane-major, one run of six lines per lane, gained again on a Zen 2
// (docs/PERFORMANCE.md).
constexpr int kQ6KQuants = 0, kQ6KHigh = 128 * 16, kQ6KScales = 192 * 16, kQ6KD = 208 * 16;
constexpr std::array<Piece, kMaxPieces> q6k_read_order() {
    std::array<Piece, kMaxPieces> p{};
    int n = 0;
    p[n++] = {kQ6KScales, 256};
    p[n++] = {kQ6KD, 32};
    for (int u = 0; u < 8; ++u) {
        for (int h = 0; h < 2; ++h) {
            p[n++] = {kQ6KQuants + 1024 * h + 64 * u, 64};
            p[n++] = {kQ6KHigh + 512 * h + 64 * u, 64};
            p[n++] = {kQ6KQuants + 1024 * h + 512 + 64 * u, 64};
        }
    }
    return p;
}

// The fields of each block struct (core/quant/legacy_formats.h, k_blocks.h, lut4_formats.h).
constexpr std::array<Layout, kDTypeCount> kLayouts = [] {
    std::array<Layout, kDTypeCount> t{};
    t[size_t(DType::Q4_0)] = {2, {{{0, 2, 2}, {2, 16, 4}}}};
    t[size_t(DType::Q4_1)] = {3, {{{0, 2, 2}, {2, 2, 2}, {4, 16, 4}}}};
    t[size_t(DType::Q5_0)] = {3, {{{0, 2, 2}, {2, 4, 4, 0, true}, {6, 16, 4}}}};
    t[size_t(DType::Q5_1)] = {4, {{{0, 2, 2}, {2, 2, 2}, {4, 4, 4, 0, true}, {8, 16, 4}}}};
    // 128 + q: the unsigned side of VPDPBUSD; the kernel subtracts 128 * sum(activations).
    t[size_t(DType::Q8_0)] = {2, {{{0, 2, 2}, {2, 32, 4, 0x80}}}};
    t[size_t(DType::Q2_K)] = {4, {{{0, 16, 1}, {16, 64, 4}, {80, 2, 2}, {82, 2, 2}}}};
    t[size_t(DType::Q3_K)] = {4, {{{0, 32, 4}, {32, 64, 4}, {96, 12, 1}, {108, 2, 2}}}};
    t[size_t(DType::Q4_K)] = {4, {{{0, 2, 2}, {2, 2, 2}, {4, 12, 1}, {16, 128, 4}}}};
    t[size_t(DType::Q5_K)] = {5, {{{0, 2, 2}, {2, 2, 2}, {4, 12, 1}, {16, 32, 4}, {48, 128, 4}}}};
    t[size_t(DType::Q6_K)] = {
        4, {{{0, 128, 4}, {128, 64, 4}, {192, 16, 1}, {208, 2, 2}}}, kMaxPieces, q6k_read_order()};
    t[size_t(DType::MXFP4)] = {2, {{{0, 1, 1}, {1, 16, 4}}}};
    t[size_t(DType::IQ4_NL)] = {2, {{{0, 2, 2}, {2, 16, 4}}}};
    t[size_t(DType::IQ4_XS)] = {4, {{{0, 2, 2}, {2, 2, 2}, {4, 4, 1}, {8, 128, 4}}}};
    // 16-bit floats, one element per "block": element k of the 16 rows side by side, which is
    // one vector of the float GEMM (core/cpu/gemm.cpp) with no transpose.
    t[size_t(DType::F16)] = {1, {{{0, 2, 2}}}};
    t[size_t(DType::BF16)] = {1, {{{0, 2, 2}}}};
    return t;
}();

// Whether this build has the kernels that read `type` repacked (repack.h).
constexpr bool has_kernels(DType type) {
    switch (type) {
        case DType::Q4_0:
        case DType::Q4_1:
        case DType::Q5_0:
        case DType::Q5_1:
        case DType::Q8_0:
        case DType::Q2_K:
        case DType::Q3_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
        case DType::MXFP4:
        case DType::IQ4_NL:
        case DType::IQ4_XS:
            return LOOM_INTEGER_KERNELS;
        case DType::F16:
        case DType::BF16:
            return LOOM_GROUPED_FLOAT_KERNELS;
        default:
            return false;
    }
}

// Moves the `n_units` units of one field of one block of row r between the row (from byte
// `plain`) and the group's block (from byte `packed`, r's first unit), XORing each with `flip`
// (and, for high_bits, reordering its bits).
// Typed units: one load and one store each, where a byte loop made loading take seconds.
template <typename Unit, bool kToRepacked>
void move_field(const uint8_t *src, uint8_t *dst, size_t plain, size_t packed, int n_units,
                Unit flip, bool high_bits) {
    for (int u = 0; u < n_units; ++u) {
        const size_t in_row = plain + size_t(u) * sizeof(Unit);
        const size_t in_group = packed + size_t(u) * size_t(kRepackRows) * sizeof(Unit);
        Unit v;
        std::memcpy(&v, src + (kToRepacked ? in_row : in_group), sizeof(Unit));
        v = Unit(v ^ flip);
        if constexpr (sizeof(Unit) == 4) {
            if (high_bits) v = spread_high_bits(v, kToRepacked);
        }
        std::memcpy(dst + (kToRepacked ? in_group : in_row), &v, sizeof(Unit));
    }
}

#if LOOM_X86_AVX2
// A field of 4-byte units into the group block, 16 bytes of each row at a time: the 16 rows'
// units 4c .. 4c + 3 transposed in registers into four vectors of one unit for every row, with
// unpacks within 128-bit lanes (a lane holding rows 4l .. 4l + 3 once the four registers hold one
// row each per lane). This is most of the bytes of every block format, and the kernels permute
// them as they read weights still in the file's layout (qgemm.h, staging_size): one load and store
// per unit made reading from the file's layout 4-5x slower than from the repacked one.
#if LOOM_X86_AVX512F
using Lanes = __m512i;  // four 128-bit lanes: rows 4l + i of register i, for l = 0 .. 3
constexpr int kLaneRows = 16;
#define LOOM_LANES(op) _mm512_##op
inline Lanes load_lanes(const uint8_t *row0, size_t stride) {
    const auto row = [&](int r) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i *>(row0 + size_t(r) * stride));
    };
    Lanes v = _mm512_zextsi128_si512(row(0));
    v = _mm512_inserti32x4(v, row(4), 1);
    v = _mm512_inserti32x4(v, row(8), 2);
    return _mm512_inserti32x4(v, row(12), 3);
}
inline Lanes xor_lanes(Lanes a, uint32_t flip) {
    return _mm512_xor_si512(a, _mm512_set1_epi32(int(flip)));
}
inline void store_lanes(uint8_t *p, Lanes v) {
    _mm512_storeu_si512(p, v);
}
#else
using Lanes = __m256i;  // two 128-bit lanes: rows 4l + i of register i, for l = 0, 1
constexpr int kLaneRows = 8;
#define LOOM_LANES(op) _mm256_##op
inline Lanes load_lanes(const uint8_t *row0, size_t stride) {
    return _mm256_loadu2_m128i(reinterpret_cast<const __m128i *>(row0 + 4 * stride),
                               reinterpret_cast<const __m128i *>(row0));
}
inline Lanes xor_lanes(Lanes a, uint32_t flip) {
    return _mm256_xor_si256(a, _mm256_set1_epi32(int(flip)));
}
inline void store_lanes(uint8_t *p, Lanes v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), v);
}
#endif

// The units of `field` (size a multiple of 16, no high_bits) of block `plain_block` of the 16
// rows at `src` into the group block at `dst + group_block`.
void transpose_field(const Field &field, const uint8_t *src, uint8_t *dst, size_t plain_block,
                     size_t group_block, size_t row_bytes) {
    const uint32_t flip = uint32_t(field.flip) * 0x01010101u;
    for (int c = 0; c < field.size / 16; ++c) {
        const uint8_t *from = src + plain_block + size_t(field.offset) + 16 * size_t(c);
        uint8_t *to = dst + group_block + size_t(kRepackRows * field.offset) +
                      size_t(4 * c) * kRepackRows * 4;
        for (int r0 = 0; r0 < kRepackRows; r0 += kLaneRows) {
            const uint8_t *rows = from + size_t(r0) * row_bytes;
            const Lanes a = load_lanes(rows, row_bytes),
                        b = load_lanes(rows + row_bytes, row_bytes),
                        c2 = load_lanes(rows + 2 * row_bytes, row_bytes),
                        d = load_lanes(rows + 3 * row_bytes, row_bytes);
            const Lanes ab_lo = LOOM_LANES(unpacklo_epi32)(a, b);
            const Lanes ab_hi = LOOM_LANES(unpackhi_epi32)(a, b);
            const Lanes cd_lo = LOOM_LANES(unpacklo_epi32)(c2, d);
            const Lanes cd_hi = LOOM_LANES(unpackhi_epi32)(c2, d);
            const Lanes units[4] = {
                LOOM_LANES(unpacklo_epi64)(ab_lo, cd_lo), LOOM_LANES(unpackhi_epi64)(ab_lo, cd_lo),
                LOOM_LANES(unpacklo_epi64)(ab_hi, cd_hi), LOOM_LANES(unpackhi_epi64)(ab_hi, cd_hi)};
            for (int u = 0; u < 4; ++u) {
                const Lanes v = flip != 0 ? xor_lanes(units[u], flip) : units[u];
                store_lanes(to + size_t(u) * kRepackRows * 4 + size_t(r0) * 4, v);
            }
        }
    }
}
#undef LOOM_LANES
#endif

template <typename Unit, bool kToRepacked>
void move_field_rows(const Field &field, const uint8_t *src, uint8_t *dst, size_t plain_block,
                     size_t group_block, size_t row_bytes) {
#if LOOM_X86_AVX2
    if constexpr (kToRepacked && sizeof(Unit) == 4) {
        if (field.size % 16 == 0 && !field.high_bits) {
            return transpose_field(field, src, dst, plain_block, group_block, row_bytes);
        }
    }
#endif
    const auto flip = Unit(uint32_t(field.flip) * 0x01010101u);
    const int n_units = field.size / int(sizeof(Unit));
    if (kToRepacked && n_units == 1 && !field.high_bits) {
        // One unit a row (a block's scales): the 16 side by side, in a loop the compiler unrolls.
        auto *to = dst + group_block + size_t(kRepackRows * field.offset);
        const uint8_t *from = src + plain_block + size_t(field.offset);
        Unit v[kRepackRows];
        for (int64_t r = 0; r < kRepackRows; ++r) {
            std::memcpy(&v[r], from + size_t(r) * row_bytes, sizeof(Unit));
            v[r] = Unit(v[r] ^ flip);
        }
        std::memcpy(to, v, sizeof v);
        return;
    }
    for (int64_t r = 0; r < kRepackRows; ++r) {
        move_field<Unit, kToRepacked>(
            src, dst, size_t(r) * row_bytes + plain_block + size_t(field.offset),
            group_block + size_t(kRepackRows * field.offset) + size_t(r) * sizeof(Unit), n_units,
            flip, field.high_bits);
    }
}

// Most pieces are one 64-byte unit: copied as such, without a call to memcpy for each.
inline void copy_piece(uint8_t *dst, const uint8_t *src, int size) {
    if (size == 64) {
        std::memcpy(dst, src, 64);
    } else {
        std::memcpy(dst, src, size_t(size));
    }
}

// Into the repacked layout, a group's 16 rows are read side by side, 16 streams a few bytes a
// step, which the hardware prefetchers do not follow: the loads of each block waited for memory
// (the kernels reading weights in the file's layout spent 85 % of their time in this permutation,
// most of it there). The group after it, the next one read in any run of groups, comes to L2
// meanwhile, a share of its lines with each block: part b of n.
inline void prefetch_next_group(const uint8_t *group, size_t group_bytes, int64_t b, int64_t n) {
    const size_t lines = (group_bytes + 63) / 64;
    const size_t first = lines * size_t(b) / size_t(n), last = lines * size_t(b + 1) / size_t(n);
    for (size_t l = first; l < last; ++l) __builtin_prefetch(group + group_bytes + 64 * l, 0, 2);
}

// Moves one group of 16 rows between layouts (prefetching the next where `prefetch`).
template <bool kToRepacked>
void convert_group(const Layout &layout, size_t block_bytes, int64_t n_blocks, const uint8_t *src,
                   uint8_t *dst, size_t row_bytes, bool prefetch = true) {
    if (layout.n_pieces > 0) {
        // The fields interleave into (or out of) one group block in L1, which then moves as the
        // pieces say.
        constexpr size_t kMaxGroupBlock = 16 * 256;
        LOOM_ASSERT(block_bytes * kRepackRows <= kMaxGroupBlock);
        alignas(64) uint8_t staged[kMaxGroupBlock];
        const Layout fields_only{layout.n_fields, layout.fields};
        for (int64_t b = 0; b < n_blocks; ++b) {
            const size_t plain_block = size_t(b) * block_bytes;
            const size_t group_block = plain_block * kRepackRows;
            size_t at = 0;
            if constexpr (kToRepacked) {
                prefetch_next_group(src, row_bytes * kRepackRows, b, n_blocks);
                uint8_t *group = dst + group_block;
                convert_group<true>(fields_only, block_bytes, 1, src + plain_block, staged,
                                    row_bytes, /*prefetch=*/false);
                for (int i = 0; i < layout.n_pieces; ++i) {
                    const Piece &piece = layout.pieces[size_t(i)];
                    copy_piece(group + at, staged + piece.from, piece.size);
                    at += size_t(piece.size);
                }
            } else {
                const uint8_t *group = src + group_block;
                for (int i = 0; i < layout.n_pieces; ++i) {
                    const Piece &piece = layout.pieces[size_t(i)];
                    copy_piece(staged + piece.from, group + at, piece.size);
                    at += size_t(piece.size);
                }
                convert_group<false>(fields_only, block_bytes, 1, staged, dst + plain_block,
                                     row_bytes);
            }
        }
        return;
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        const size_t plain_block = size_t(b) * block_bytes;
        const size_t group_block = plain_block * kRepackRows;
        if (kToRepacked && prefetch) {
            prefetch_next_group(src, row_bytes * kRepackRows, b, n_blocks);
        }
        for (int f = 0; f < layout.n_fields; ++f) {
            const Field &field = layout.fields[size_t(f)];
            switch (field.unit) {
                case 1:
                    move_field_rows<uint8_t, kToRepacked>(field, src, dst, plain_block, group_block,
                                                          row_bytes);
                    break;
                case 2:
                    move_field_rows<uint16_t, kToRepacked>(field, src, dst, plain_block,
                                                           group_block, row_bytes);
                    break;
                default:
                    move_field_rows<uint32_t, kToRepacked>(field, src, dst, plain_block,
                                                           group_block, row_bytes);
                    break;
            }
        }
    }
}

// The same move for a layout of one 16-bit field per block (the float types): a transpose of
// 16 x n_blocks elements, done directly since a model's F16 matrices are gigabytes. It goes
// through a 16 x 16 tile that stays in L1, so that each row is read (or written) 32 bytes at a
// time rather than 2 bytes with a stride of a row between neighbours.
void convert_group_16bit(int64_t n_blocks, const uint16_t *src, uint16_t *dst, int64_t row_elements,
                         bool to_repacked) {
    constexpr int64_t kTile = kRepackRows;
    uint16_t tile[kTile][kTile];  // [row][element]
    int64_t b0 = 0;
    for (; b0 + kTile <= n_blocks; b0 += kTile) {
        if (to_repacked) {
            for (int64_t r = 0; r < kRepackRows; ++r)
                std::memcpy(tile[r], src + r * row_elements + b0, sizeof tile[r]);
            for (int64_t b = 0; b < kTile; ++b) {
                for (int64_t r = 0; r < kRepackRows; ++r)
                    dst[(b0 + b) * kRepackRows + r] = tile[r][b];
            }
        } else {
            for (int64_t b = 0; b < kTile; ++b) {
                for (int64_t r = 0; r < kRepackRows; ++r)
                    tile[r][b] = src[(b0 + b) * kRepackRows + r];
            }
            for (int64_t r = 0; r < kRepackRows; ++r)
                std::memcpy(dst + r * row_elements + b0, tile[r], sizeof tile[r]);
        }
    }
    for (int64_t b = b0; b < n_blocks; ++b) {  // the last n_blocks % 16 elements of each row
        for (int64_t r = 0; r < kRepackRows; ++r) {
            const int64_t plain = r * row_elements + b, packed = b * kRepackRows + r;
            if (to_repacked) {
                dst[packed] = src[plain];
            } else {
                dst[plain] = src[packed];
            }
        }
    }
}

void convert_rows(DType type, const void *src, void *dst, int64_t rows, size_t row_bytes,
                  bool to_repacked) {
    const Layout &layout = kLayouts[size_t(type)];
    const size_t block_bytes = traits(type).type_size;
    LOOM_ASSERT(layout.n_fields > 0 && rows % kRepackRows == 0 && row_bytes % block_bytes == 0);
    const int64_t n_blocks = int64_t(row_bytes / block_bytes);
    const size_t group_bytes = row_bytes * kRepackRows;
    if (block_bytes == 2) {
        for (int64_t g = 0; g < rows / kRepackRows; ++g) {
            convert_group_16bit(n_blocks, static_cast<const uint16_t *>(src) + g * group_bytes / 2,
                                static_cast<uint16_t *>(dst) + g * group_bytes / 2, n_blocks,
                                to_repacked);
        }
        return;
    }
    for (int64_t g = 0; g < rows / kRepackRows; ++g) {
        const auto *from = static_cast<const uint8_t *>(src) + g * group_bytes;
        auto *to = static_cast<uint8_t *>(dst) + g * group_bytes;
        if (to_repacked) {
            convert_group<true>(layout, block_bytes, n_blocks, from, to, row_bytes);
        } else {
            convert_group<false>(layout, block_bytes, n_blocks, from, to, row_bytes);
        }
    }
}

// Host memory; tensors that can_repack are stored repacked: writes repack them (whole tensors
// only, since a group's bytes come from 16 rows), reads give back the file's bytes.
class RepackBuffer : public Buffer {
  public:
    RepackBuffer(BufferType &type, std::unique_ptr<Buffer> host)
        : type_(type), host_(std::move(host)) {}
    BufferType &type() const override { return type_; }
    void *base() const override { return host_->base(); }
    size_t size() const override { return host_->size(); }
    bool is_host() const override { return true; }
    void set_tensor(Tensor *t, const void *data, size_t offset, size_t size) override {
        if (!level_can_repack(t)) return host_->set_tensor(t, data, offset, size);
        require_whole(t, offset, size, "set_tensor");
        repack_rows(t->type, data, t->data, t->nrows(), t->nb[1]);
    }
    void get_tensor(const Tensor *t, void *data, size_t offset, size_t size) override {
        if (!level_can_repack(t)) return host_->get_tensor(t, data, offset, size);
        require_whole(t, offset, size, "get_tensor");
        unpack_rows(t->type, t->data, data, t->nrows(), t->nb[1]);
    }
    void memset_tensor(Tensor *t, uint8_t value, size_t offset, size_t size) override {
        if (level_can_repack(t)) fail("repack", "memset_tensor of repacked {}", describe(t));
        host_->memset_tensor(t, value, offset, size);
    }
    bool cpy_tensor(const Tensor *src, Tensor *dst) override {
        if (!level_can_repack(dst)) return host_->cpy_tensor(src, dst);
        if (src->nbytes() != dst->nbytes() || src->data == nullptr || level_is_repacked(src))
            return false;
        set_tensor(dst, src->data, 0, dst->nbytes());
        return true;
    }
    void clear(uint8_t value) override { host_->clear(value); }

  private:
    static void require_whole(const Tensor *t, size_t offset, size_t size, const char *what) {
        if (offset != 0 || size != t->nbytes()) {
            fail("repack", "{} of bytes [{}, {}) of {}: repacked tensors move whole", what, offset,
                 offset + size, describe(t));
        }
    }
    BufferType &type_;
    std::unique_ptr<Buffer> host_;
};

class RepackBufferType : public BufferType {
  public:
    const char *name() const override { return "CPU_REPACK"; }
    std::unique_ptr<Buffer> allocate(size_t size) override {
        return std::make_unique<RepackBuffer>(*this, host_buffer_type().allocate(size));
    }
    size_t alignment() const override { return host_buffer_type().alignment(); }
    size_t max_size() const override { return host_buffer_type().max_size(); }
    bool is_host() const override { return true; }
};

}  // namespace

bool level_has_layout(DType type) {
    return has_kernels(type) && kLayouts[size_t(type)].n_fields > 0;
}

bool level_can_repack(const Tensor *t) {
    return level_has_layout(t->type) && t->view_src == nullptr && t->is_contiguous() &&
           t->ne[1] % kRepackRows == 0;
}

bool level_is_repacked(const Tensor *t) {
    return t->buffer != nullptr && &t->buffer->type() == &level_repack_buffer_type() &&
           level_can_repack(t);
}

BufferType &level_repack_buffer_type() {
    static RepackBufferType type;
    return type;
}

void repack_rows(DType type, const void *src, void *dst, int64_t rows, size_t row_bytes) {
    convert_rows(type, src, dst, rows, row_bytes, true);
}

void unpack_rows(DType type, const void *src, void *dst, int64_t rows, size_t row_bytes) {
    convert_rows(type, src, dst, rows, row_bytes, false);
}

}  // namespace loom::cpu::inline LOOM_ISA
