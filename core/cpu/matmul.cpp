// CPU kernels for the matrix products, mul_mat and mul_mat_id. Each node becomes a list of jobs
// for the engine in core/cpu/gemm.h: mul_mat one per batch of b, mul_mat_id one per expert that
// some (slot, token) pair chose, so every expert's weights stream once per node.
#include <algorithm>

#include "core/cpu/gemm.h"
#include "core/cpu/qgemm.h"
#include "core/cpu/repack.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

std::byte *bytes(void *p) {
    return static_cast<std::byte *>(p);
}

bool is_weight_type(const Tensor *a) {
    // A block format cannot be read with an element stride; plain types are gathered.
    if (traits(a->type).is_quantized)
        return traits(a->type).vec_dot != nullptr && a->rows_contiguous();
    return gemm::weight_ops(a->type).pack != nullptr;
}

bool writes_f32_rows(const Tensor *dst) {
    return dst->type == DType::F32 && dst->nb[0] == sizeof(float);
}

// ---------------------------------------------------------------------------------------------
// Repacked block-format weights (core/cpu/repack.h) go through the integer kernels of
// core/cpu/qgemm.h, and so do those whose repacked copy is being made (kFlagRepackPending), which
// the kernels permute as they go, for the same bits; everything else through gemm.h: the per-row
// dot products of the file's layout (`--no-repack`) and the float weights, repacked as grouped rows
// or not.
bool integer_kernels(const Tensor *a) {
    return traits(a->type).is_quantized &&
           (level_is_repacked(a) || (level_can_repack(a) && (a->flags & kFlagRepackPending)));
}

void run_product(const ComputeParams &params, const gemm::Problem &problem, const Tensor *a,
                 std::byte *work) {
    if (integer_kernels(a)) {
        qgemm::run(params, problem, a->type, work);
    } else {
        gemm::run(params, problem, work);
    }
}

size_t product_work_size(const Tensor *a, int64_t max_n) {
    if (integer_kernels(a)) {
        const size_t staging = level_is_repacked(a) ? 0 : qgemm::staging_size(a->type, a->ne[0]);
        return qgemm::work_size(a->type, a->ne[0]) + staging;
    }
    return gemm::work_size(a->type, a->ne[0], max_n);
}

// The integer path quantizes every column of the node once, into scratch the threads share.
size_t product_shared_size(const Tensor *a, int64_t n_columns) {
    return integer_kernels(a) ? qgemm::shared_size(a->type, a->ne[0], n_columns) : 0;
}

// ---------------------------------------------------------------------------------------------
// mul_mat: a [K, M, A2, A3] · b F32 [K, N, B2, B3] -> dst F32 [M, N, B2, B3]

// Batch i = i2 + B2 * i3 of b uses a's batch (i2 / (B2 / A2), i3 / (B3 / A3)).
gemm::Job mul_mat_job(const void *ctx, int64_t i) {
    const auto *dst = static_cast<const Tensor *>(ctx);
    const Tensor *a = dst->src[0];
    const Tensor *b = dst->src[1];
    const int64_t i2 = i % b->ne[2], i3 = i / b->ne[2];
    const int64_t a2 = i2 / (b->ne[2] / a->ne[2]), a3 = i3 / (b->ne[3] / a->ne[3]);
    return {.a = bytes(a->data) + size_t(a2) * a->nb[2] + size_t(a3) * a->nb[3],
            .a_nb0 = a->nb[0],
            .a_nb1 = a->nb[1],
            .a_type = a->type,
            .a_grouped = level_is_repacked(a),
            .m = a->ne[1],
            .cols = {.b = bytes(b->data) + size_t(i2) * b->nb[2] + size_t(i3) * b->nb[3],
                     .b_nb0 = b->nb[0],
                     .b_s1 = b->nb[1],
                     .dst = bytes(dst->data) + size_t(i2) * dst->nb[2] + size_t(i3) * dst->nb[3],
                     .dst_s1 = dst->nb[1]},
            .n = b->ne[1]};
}

// The order dst's elements sum in: k_blocks unless the node asks for another and its weights
// can take it (gemm::sums_in_order).
SumOrder sum_order(const Tensor *dst) {
    const SumOrder order = get_op_params<MulMatOpParams>(dst).order;
    if (order == SumOrder::k_blocks || !gemm::sums_in_order(mul_mat_job(dst, 0))) {
        return SumOrder::k_blocks;
    }
    return order;
}

void mul_mat_compute(const ComputeParams &params, Tensor *dst) {
    const Tensor *a = dst->src[0];
    const Tensor *b = dst->src[1];
    const gemm::Problem problem{
        .k = a->ne[0], .n_jobs = b->ne[2] * b->ne[3], .job_at = mul_mat_job, .ctx = dst};
    const SumOrder order = sum_order(dst);
    if (order != SumOrder::k_blocks) {
        gemm::run_ordered(params, problem, order, params.work);
    } else {
        run_product(params, problem, a, params.work);
    }
}

// Products of several weights with the same activations (a layer's Q, K and V; an FFN's gate and
// up) run as one problem, one step instead of one each: the threads take row chunks of every
// weight in turn, and on the integer path the columns are quantized once. Each output element is
// computed exactly as alone. Repacked weights only: F16 / BF16 grouped rows take the float path,
// block formats the integer one, and every weight of a run the same.
bool mul_mat_joins(const Tensor *first, const Tensor *next) {
    auto single = [](const Tensor *t) {
        const Tensor *a = t->src[0], *b = t->src[1];
        return level_is_repacked(a) && a->ne[2] == 1 && a->ne[3] == 1 && b->ne[2] == 1 &&
               b->ne[3] == 1;
    };
    return single(first) && single(next) && next->src[1] == first->src[1] &&
           next->src[0]->type == first->src[0]->type && next->src[0]->ne[0] == first->src[0]->ne[0];
}

gemm::Job run_job(const void *ctx, int64_t i) {
    const auto *nodes = static_cast<const std::span<Tensor *const> *>(ctx);
    return mul_mat_job((*nodes)[size_t(i)], 0);
}

void mul_mat_compute_run(const ComputeParams &params, std::span<Tensor *const> nodes) {
    const Tensor *a = nodes[0]->src[0];
    const gemm::Problem problem{.k = a->ne[0],
                                .n_jobs = int64_t(nodes.size()),
                                .shared_columns = true,
                                .job_at = run_job,
                                .ctx = &nodes};
    run_product(params, problem, a, params.work);
}

bool mul_mat_supports(const Tensor *dst) {
    return is_weight_type(dst->src[0]) && dst->src[1]->type == DType::F32 && writes_f32_rows(dst);
}

size_t mul_mat_work_size(const Tensor *dst) {
    if (sum_order(dst) != SumOrder::k_blocks) return gemm::ordered_work_size(dst->src[0]->ne[0]);
    return product_work_size(dst->src[0], dst->src[1]->ne[1]);
}

size_t mul_mat_shared_size(const Tensor *dst) {
    if (sum_order(dst) != SumOrder::k_blocks) return 0;
    const Tensor *b = dst->src[1];
    return product_shared_size(dst->src[0], b->ne[1] * b->ne[2] * b->ne[3]);
}

// ---------------------------------------------------------------------------------------------
// mul_mat_id: as [K, M, n_expert] · b F32 [K, 1 or n_used, n_tokens], ids I32 [n_used, n_tokens]
// -> dst F32 [M, n_used, n_tokens]. Pair p = slot + n_used * token is one output column.

// The pairs grouped by expert (a counting sort, stable), in this thread's scratch. Every thread
// builds the same groups, which costs less than sharing them through a barrier.
struct ExpertGroups {
    int32_t *start = nullptr;   // [n_expert + 2]: pairs of expert e are [start[e], start[e + 1]);
                                // bucket n_expert holds pairs whose id is out of range
    int32_t *pairs = nullptr;   // [n_pairs]
    int32_t *active = nullptr;  // [n_expert]: experts with at least one pair, ascending
    int64_t n_active = 0;
};

struct MulMatIdContext {
    const Tensor *dst;
    const ExpertGroups *groups;
};

size_t id_int_count(const Tensor *dst) {
    const int64_t n_expert = dst->src[0]->ne[2];
    const int64_t n_pairs = dst->src[2]->ne[0] * dst->src[2]->ne[1];
    return size_t(2 * (n_expert + 2) + n_pairs + n_expert);
}

size_t id_ints_bytes(const Tensor *dst) {
    return (id_int_count(dst) * sizeof(int32_t) + 63) / 64 * 64;  // keeps gemm's scratch aligned
}

ExpertGroups group_by_expert(const Tensor *dst, int32_t *ints) {
    const Tensor *ids = dst->src[2];
    const int64_t n_expert = dst->src[0]->ne[2];
    const int64_t n_used = ids->ne[0], n_pairs = ids->ne[0] * ids->ne[1];
    const int64_t n_buckets = n_expert + 1;
    ExpertGroups g;
    g.start = ints;
    int32_t *cursor = ints + n_expert + 2;
    g.pairs = cursor + n_expert + 2;
    g.active = g.pairs + n_pairs;
    auto bucket_of = [&](int64_t p) {
        const auto *id = reinterpret_cast<const int32_t *>(
            bytes(ids->data) + size_t(p % n_used) * ids->nb[0] + size_t(p / n_used) * ids->nb[1]);
        return *id >= 0 && *id < n_expert ? int64_t(*id) : n_expert;
    };
    std::fill(g.start, g.start + n_buckets + 1, 0);
    for (int64_t p = 0; p < n_pairs; ++p) ++g.start[bucket_of(p) + 1];
    for (int64_t e = 0; e < n_buckets; ++e) g.start[e + 1] += g.start[e];
    std::copy(g.start, g.start + n_buckets, cursor);
    for (int64_t p = 0; p < n_pairs; ++p) g.pairs[cursor[bucket_of(p)]++] = int32_t(p);
    for (int64_t e = 0; e < n_expert; ++e) {
        if (g.start[e + 1] > g.start[e]) g.active[g.n_active++] = int32_t(e);
    }
    return g;
}

gemm::Job mul_mat_id_job(const void *ctx, int64_t i) {
    const auto *c = static_cast<const MulMatIdContext *>(ctx);
    const Tensor *dst = c->dst;
    const Tensor *as = dst->src[0];
    const Tensor *b = dst->src[1];
    const int32_t e = c->groups->active[i];
    const int32_t first = c->groups->start[e];
    return {.a = bytes(as->data) + size_t(e) * as->nb[2],
            .a_nb0 = as->nb[0],
            .a_nb1 = as->nb[1],
            .a_type = as->type,
            .a_grouped = level_is_repacked(as),
            .m = as->ne[1],
            .cols = {.b = bytes(b->data),
                     .b_nb0 = b->nb[0],
                     .b_s1 = b->ne[1] == 1 ? 0 : b->nb[1],  // one b row shared by every slot
                     .b_s2 = b->nb[2],
                     .dst = bytes(dst->data),
                     .dst_s1 = dst->nb[1],
                     .dst_s2 = dst->nb[2],
                     .list = c->groups->pairs + first,
                     .n1 = dst->src[2]->ne[0]},
            .n = c->groups->start[e + 1] - first};
}

void mul_mat_id_compute(const ComputeParams &params, Tensor *dst) {
    const Tensor *as = dst->src[0];
    const int64_t n_expert = as->ne[2];
    const ExpertGroups groups = group_by_expert(dst, reinterpret_cast<int32_t *>(params.work));

    // Pairs naming no expert get zeros, shared out round-robin.
    const int64_t n_used = dst->src[2]->ne[0];
    for (int32_t i = groups.start[n_expert] + params.ith; i < groups.start[n_expert + 1];
         i += params.nth) {
        const int32_t p = groups.pairs[i];
        auto *row = reinterpret_cast<float *>(bytes(dst->data) + size_t(p % n_used) * dst->nb[1] +
                                              size_t(p / n_used) * dst->nb[2]);
        std::fill(row, row + dst->ne[0], 0.0f);
    }

    const MulMatIdContext ctx{.dst = dst, .groups = &groups};
    const gemm::Problem problem{
        .k = as->ne[0], .n_jobs = groups.n_active, .job_at = mul_mat_id_job, .ctx = &ctx};
    run_product(params, problem, as, params.work + id_ints_bytes(dst));
}

bool mul_mat_id_supports(const Tensor *dst) {
    return is_weight_type(dst->src[0]) && dst->src[1]->type == DType::F32 &&
           dst->src[2]->type == DType::I32 && writes_f32_rows(dst);
}

size_t mul_mat_id_work_size(const Tensor *dst) {
    const Tensor *ids = dst->src[2];
    // One expert may take every pair.
    return id_ints_bytes(dst) + product_work_size(dst->src[0], ids->ne[0] * ids->ne[1]);
}

size_t mul_mat_id_shared_size(const Tensor *dst) {
    const Tensor *ids = dst->src[2];
    return product_shared_size(dst->src[0], ids->ne[0] * ids->ne[1]);
}

}  // namespace

void register_matmul_kernels(KernelTable &table) {
    table[size_t(Op::mul_mat)] = {.compute = mul_mat_compute,
                                  .supports = mul_mat_supports,
                                  .work_size = mul_mat_work_size,
                                  .shared_size = mul_mat_shared_size,
                                  .joins = mul_mat_joins,
                                  .compute_run = mul_mat_compute_run};
    table[size_t(Op::mul_mat_id)] = {.compute = mul_mat_id_compute,
                                     .supports = mul_mat_id_supports,
                                     .work_size = mul_mat_id_work_size,
                                     .shared_size = mul_mat_id_shared_size};
}

}  // namespace loom::cpu::inline LOOM_ISA
