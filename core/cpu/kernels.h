#pragma once
// The CPU kernel table: one row per op, filled by one registration function per op family
// (one file each under core/cpu/). Kernels never throw: the builders checked shapes and dtypes,
// and CpuBackend::graph_compute checks `supports` for every node before it runs any.
//
// Thread-count invariance: every kernel splits work only by output rows (or, in mul_mat, by
// whole column panels) and computes each output element the same way whichever thread owns
// it, so every op gives the same bits for any number of threads. tests/core/test_threads.cpp
// holds every op to that.
#include <algorithm>
#include <array>
#include <cstddef>
#include <span>

#include "core/isa.h"
#include "core/op_params.h"
#include "loom/backend.h"
#include "loom/core.h"

namespace loom::cpu {

class ThreadPool;

// What one thread sees while running one node.
struct ComputeParams {
    int ith = 0;                // this thread's index
    int nth = 1;                // threads running the node
    std::byte *work = nullptr;  // this thread's scratch, at least the kernel's work_size bytes,
    size_t work_size = 0;       // 64-byte aligned
    // Scratch every thread of the node sees, the kernel's shared_size bytes (64-byte aligned):
    // for results one phase computes once and the next reads after a barrier().
    std::byte *shared = nullptr;
    ThreadPool *pool = nullptr;
    // Waits until every thread of the node has reached this point (for multi-phase kernels).
    void barrier() const;
};

struct Kernel {
    // Null: the op moves no data (views) and needs no thread synchronisation.
    void (*compute)(const ComputeParams &params, Tensor *dst) = nullptr;
    // Null: every node the builder accepts is supported.
    bool (*supports)(const Tensor *dst) = nullptr;
    // Per-thread scratch bytes; null: none.
    size_t (*work_size)(const Tensor *dst) = nullptr;
    // Bytes of scratch shared by the node's threads; null: none.
    size_t (*shared_size)(const Tensor *dst) = nullptr;
    // Consecutive nodes of this op that can run as one (neither reads another's result):
    // `joins` says whether `next` may join the run that `first` starts, and `compute_run`
    // computes such a run, at least two nodes, behind one barrier instead of one each. Null:
    // every node runs alone.
    bool (*joins)(const Tensor *first, const Tensor *next) = nullptr;
    void (*compute_run)(const ComputeParams &params, std::span<Tensor *const> nodes) = nullptr;
};

using KernelTable = std::array<Kernel, kOpCount>;
// The table of the kernels in use (the level core/isa.h selected; core/cpu/dispatch.cpp).
const KernelTable &kernel_table();

// The kernels of one instruction-set level, as the ISA-neutral rest of the backend sees them.
struct Variant {
    KernelTable table;
    BufferType &(*repack_buffer_type)();
    bool (*has_repacked_layout)(DType type);
    bool (*can_repack)(const Tensor *t);
    bool (*is_repacked)(const Tensor *t);
    // Whether BF16 weights are multiplied two elements at a time (AVX512-BF16; core/cpu/gemm.h).
    bool bf16_pairs;
};

// The kernels in use: whether their BF16 products sum element pairs (Variant::bf16_pairs).
bool bf16_sums_pairs();

}  // namespace loom::cpu

namespace loom::cpu::inline LOOM_ISA {

// This level's kernels (core/cpu/variant.cpp).
const Variant &variant();

// One per file, each filling the rows of its op family.
void register_layout_kernels(
    KernelTable &table);  // layout.cpp: views, cont, cpy, repeat, concat, pad
void register_rows_kernels(KernelTable &table);  // get_set_rows.cpp
void register_elementwise_kernels(
    KernelTable &table);  // elementwise.cpp: add, sub, mul, div, swiglu, geglu
void register_unary_kernels(KernelTable &table);      // unary.cpp
void register_reduce_kernels(KernelTable &table);     // reduce.cpp: sum_rows, mean, argmax
void register_sort_kernels(KernelTable &table);       // sort.cpp
void register_matmul_kernels(KernelTable &table);     // matmul.cpp
void register_norm_kernels(KernelTable &table);       // norm.cpp
void register_rope_kernels(KernelTable &table);       // rope.cpp
void register_hadamard_kernels(KernelTable &table);   // hadamard.cpp
void register_softmax_kernels(KernelTable &table);    // softmax.cpp: soft_max, diag_mask_inf
void register_attention_kernels(KernelTable &table);  // attention.cpp: flash_attn_ext

}  // namespace loom::cpu::inline LOOM_ISA

namespace loom::cpu {

// ---------------------------------------------------------------------------------------------
// Helpers shared by kernels

struct Range {
    int64_t begin, end;
};
// Thread ith's share of n items in contiguous chunks (deterministic for given n and nth).
inline Range split_range(int64_t n, int ith, int nth) {
    const int64_t per = (n + nth - 1) / nth;
    const int64_t begin = std::min(n, per * ith);
    return {begin, std::min(n, begin + per)};
}

// Splits a row index into (i1, i2, i3) for a tensor with dims ne[1], ne[2].
struct RowIndex {
    int64_t i1, i2, i3;
};
inline RowIndex unravel_row(int64_t row, const Tensor *t) {
    const int64_t i1 = row % t->ne[1];
    const int64_t i23 = row / t->ne[1];
    return {i1, i23 % t->ne[2], i23 / t->ne[2]};
}

// A row of n elements of `type` at p as floats: p itself when F32 and contiguous (stride ==
// 4), else converted (or gathered with byte stride `stride`) into buf.
const float *load_row(DType type, const void *p, size_t stride, int64_t n, float *buf);
// Writes n floats to a row of `type` at p with element byte stride `stride`, converted as ops
// convert (from_float_in_ops).
void store_row(DType type, const float *src, void *p, size_t stride, int64_t n);

}  // namespace loom::cpu
