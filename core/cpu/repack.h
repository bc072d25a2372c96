#pragma once
// Weights interleaved for the integer matrix kernels (core/cpu/qgemm.cpp).
//
// A GGUF block-format matrix stores each row's blocks one after another. The integer kernels
// instead want one vector to hold the same 4 bytes of 16 consecutive rows, so that one VPDPBUSD
// against 4 broadcast activation bytes advances 16 dot products at once and each lane ends a
// block holding that row's exact integer sum. The repacked layout is a permutation of the file's
// bytes within each group of 16 rows: for block b of the group, every field of the block (the
// F16 scales, the packed scales, the quants) becomes that field of the 16 rows side by side, in
// units of 2 (F16 scalars), 1 (scale bytes) or 4 (quants) bytes. Fields keep their order, so the
// field at byte offset o of a block starts at byte 16 * o of the group's block. Q8_0's quants are
// also offset by 128 (stored as unsigned bytes, which VPDPBUSD needs on one side), the bits
// of Q5_0 / Q5_1's qh (a 4-byte unit per row) are reordered for the tile, and Q6_K's group block
// is then cut into pieces put in the order its tile reads them (repack.cpp).
//
// F16 and BF16 matrices are stored the same way with one element per block: element k of the
// 16 rows side by side (32 bytes), so the float GEMM reads a vector of 16 rows' element k with
// one load instead of transposing 16 row vectors (core/cpu/gemm.h, Job::a_grouped).
//
// Repacking keeps sizes and strides: a repacked tensor has the nb[] of the original.
#include <cstddef>
#include <cstdint>

#include "core/isa.h"
#include "loom/backend.h"
#include "loom/tensor.h"

// The integer kernels of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K-Q6_K, MXFP4, IQ4_NL and IQ4_XS run
// on 64 bytes of a group at once: one AVX-512BW register or two AVX2 ones
// (core/cpu/qgemm_simd.h), with F16C for the scales.
#if (LOOM_X86_AVX512BW || (LOOM_X86_AVX2 && LOOM_X86_FMA)) && LOOM_X86_F16C
#define LOOM_INTEGER_KERNELS 1
#else
#define LOOM_INTEGER_KERNELS 0
#endif
// MXFP4, IQ4_NL and IQ4_XS have kernels of their own for AVX-512 VNNI, whose VPDPBUSD multiplies
// their table values made unsigned (up to 241) exactly; other builds multiply them signed.
#if LOOM_X86_AVX512VNNI && LOOM_X86_AVX512BW && LOOM_X86_F16C
#define LOOM_VNNI512_KERNELS 1
#else
#define LOOM_VNNI512_KERNELS 0
#endif
// The grouped float GEMM of F16 and BF16 (core/cpu/gemm.cpp) reads a group's 16 rows as one
// vector of 16 floats (AVX-512) or two of 8 (AVX2), and its panels of 2 vectors hold whole groups.
#if LOOM_X86_AVX512F || LOOM_X86_AVX2
#define LOOM_GROUPED_FLOAT_KERNELS 1
#else
#define LOOM_GROUPED_FLOAT_KERNELS 0
#endif

namespace loom::cpu {

// Rows interleaved per group.
inline constexpr int64_t kRepackRows = 16;

// The answers of the kernels in use (the level core/isa.h selected; core/cpu/dispatch.cpp):
// True when `type` has a repacked layout and those kernels read it: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, MXFP4, IQ4_NL, IQ4_XS, F16, BF16 (AVX2 or AVX-512).
bool has_repacked_layout(DType type);
// True when t can be stored repacked: a type with a layout, contiguous, rows a multiple of 16.
bool can_repack(const Tensor *t);
// True when t's bytes are stored repacked (t lives in cpu_repack_buffer_type() and can_repack).
bool is_repacked(const Tensor *t);

}  // namespace loom::cpu

namespace loom::cpu::inline LOOM_ISA {

// The same three questions answered by this level's kernels, which ask them of themselves.
bool level_has_layout(DType type);
bool level_can_repack(const Tensor *t);
bool level_is_repacked(const Tensor *t);
// This level's buffer type for weights (cpu_repack_buffer_type() of the level in use).
BufferType &level_repack_buffer_type();

// Converts `rows` (a multiple of 16) rows of `row_bytes` each between the file's layout and the
// repacked one; src and dst do not overlap.
void repack_rows(DType type, const void *src, void *dst, int64_t rows, size_t row_bytes);
void unpack_rows(DType type, const void *src, void *dst, int64_t rows, size_t row_bytes);

}  // namespace loom::cpu::inline LOOM_ISA
