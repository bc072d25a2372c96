// The driver of the repacked-weight products: columns quantized into shared panels, then tiles
// of 16 rows x one panel (core/cpu/qgemm.h).
#include "core/cpu/qgemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "core/cpu/repack.h"
#include "core/cpu/stream_parts.h"

namespace loom::cpu::inline LOOM_ISA::qgemm {
namespace {

size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}

size_t column_bytes(const Format &f, int64_t k) {
    return size_t(k / f.block) * f.column_block_bytes();
}

// Per-thread scratch: one column as F32, the same quantized, and a tile's sums, at these offsets.
struct ScratchLayout {
    size_t act, out, bytes;
};
ScratchLayout scratch_layout(const Format &f, int64_t k) {
    ScratchLayout l{};
    l.act = round_up(size_t(k) * sizeof(float), 64);
    l.out = l.act + round_up(row_size(f.act_type, k), 64);
    static_assert(kStreamGroups <= kPanel, "a tile's sums fit `out`");
    l.bytes = l.out + size_t(kPanel * kGroupRows) * sizeof(float);
    return l;
}

struct Scratch {
    float *x;
    std::byte *act;
    float *out;
    std::byte *staging;  // staging_size bytes, where the work has them (after the rest)
};

Scratch carve(std::byte *work, const Format &f, int64_t k) {
    const ScratchLayout l = scratch_layout(f, k);
    return {.x = reinterpret_cast<float *>(work),
            .act = work + l.act,
            .out = reinterpret_cast<float *>(work + l.out),
            .staging = work + l.bytes};
}

// Weight rows one thread keeps in L2 while every panel passes by: about half of the 1.25 MiB L2
// (Ice Lake server), so each weight byte comes from memory once per node and each panel from L3
// once per this many rows.
constexpr size_t kRowBlockBytes = 512 * 1024;

// The shared scratch: the counter of phase 2's next chunk, then the quantized panels.
constexpr size_t kCounterBytes = 64;  // its own cache line
std::atomic<int64_t> &next_chunk(const ComputeParams &params) {
    static_assert(sizeof(std::atomic<int64_t>) <= kCounterBytes);
    return *reinterpret_cast<std::atomic<int64_t> *>(params.shared);
}
std::byte *panels_base(const ComputeParams &params) {
    return params.shared + kCounterBytes;
}

// Phase 1: column j of job i goes to slot j % kPanel of panel j / kPanel of the job; the job's
// panels follow those of the jobs before it, `first` columns in. With shared columns only job 0's
// are quantized, and every job reads them.
void quantize_columns(const ComputeParams &params, const gemm::Problem &problem, const Format &f,
                      const Scratch &s) {
    const int64_t K = problem.k;
    const int64_t n_blocks = K / f.block;
    const size_t col_bytes = column_bytes(f, K);
    const gemm::Quantizer quantize = traits(f.act_type).from_float_in_ops;

    const int64_t n_jobs = problem.shared_columns ? 1 : problem.n_jobs;
    int64_t total = 0;
    for (int64_t i = 0; i < n_jobs; ++i) total += problem.job_at(problem.ctx, i).n;
    const Range mine = split_range(total, params.ith, params.nth);
    int64_t first = 0;
    for (int64_t i = 0; i < n_jobs && first < mine.end; ++i) {
        const gemm::Job job = problem.job_at(problem.ctx, i);
        const int64_t jb = std::max<int64_t>(0, mine.begin - first);
        const int64_t je = std::min<int64_t>(job.n, mine.end - first);
        for (int64_t j = jb; j < je; ++j) {
            const float *x = load_row(DType::F32, job.cols.b_row(j), job.cols.b_nb0, K, s.x);
            quantize(x, s.act, K);
            const int64_t panel0 = j / kPanel * kPanel;
            const int w = int(std::min<int64_t>(kPanel, job.n - panel0));
            f.prepare(s.act, n_blocks, w, int(j - panel0),
                      panels_base(params) + size_t(first + panel0) * col_bytes);
        }
        first += job.n;
    }
}

// Phase 2's unit of work, in groups of 16 rows of one job: a row block that stays in L2 while
// every panel passes, or, for the one or two columns of generation (weights streamed once,
// nothing to keep), a contiguous run of rows: long, since each new run restarts the hardware
// prefetchers' stream and costs a contended atomic, yet a few per thread, so that threads that
// run at different speeds (another process, the hypervisor) still end a node together. Measured
// on the 1B files (AMD EPYC Zen 5, 2 threads, alternating): 4 groups per chunk against 4 chunks
// per thread, Q2_K 108 -> 122 t/s, Q3_K_M 90 -> 100. The first nth chunks of generation take half
// of a job's rows, evenly (each thread's first, prefetched before the barrier); each later one a
// 1 / (2 nth) share of what is left, at least kStreamMinChunkGroups, so that the last ones, whose
// ends decide when the node ends, are short. Which thread computes a tile changes no bit of it.
constexpr int64_t kStreamMinChunkGroups = 4;

struct Chunks {
    int64_t groups;  // of the job
    int64_t first;   // groups of each of the first nth chunks (all of them when fixed)
    int64_t nth;
    bool shrinking;

    Chunks(const gemm::Job &job, int64_t n_max, int nth_) : groups(job.m / kGroupRows), nth(nth_) {
        shrinking = n_max <= kStreamColumns;
        first = shrinking
                    ? std::max(kStreamMinChunkGroups, (groups + 2 * nth - 1) / (2 * nth))
                    : std::max<int64_t>(1, int64_t(kRowBlockBytes / (job.a_nb1 * kGroupRows)));
    }
    int64_t size(int64_t c, int64_t begin) const {
        if (!shrinking || c < nth) return first;
        return std::max(kStreamMinChunkGroups, (groups - begin + 2 * nth - 1) / (2 * nth));
    }
    // The groups [begin, end) of chunk c, empty past the last chunk.
    std::pair<int64_t, int64_t> range(int64_t c) const {
        if (!shrinking) return {std::min(groups, c * first), std::min(groups, (c + 1) * first)};
        int64_t begin = std::min(c, nth) * first;
        for (int64_t i = nth; i < c && begin < groups; ++i) begin += size(i, begin);
        begin = std::min(begin, groups);
        return {begin, std::min(groups, begin + size(c, begin))};
    }
    int64_t count() const {
        if (!shrinking) return (groups + first - 1) / first;
        int64_t c = 0;
        for (int64_t begin = 0; begin < groups; ++c) begin += size(c, begin);
        return c;
    }
};

// The streams a job's run of groups is read in: kStreamGroups for one column where the format
// has a stream tile, else one.
int streams_of(const gemm::Job &job, const Format &f) {
    return job.n == 1 && f.streams ? kStreamGroups : 1;
}

// Groups of rows the tiles read at once from `staging` (qgemm.h): those of one stream tile, or a
// row block.
int64_t row_block_groups(size_t group_bytes) {
    return std::max<int64_t>(1, int64_t(kRowBlockBytes / group_bytes));
}
int64_t staged_groups(size_t group_bytes) {
    return std::max<int64_t>(kStreamGroups, row_block_groups(group_bytes));
}

// The bytes the tiles read for `count` groups `step` groups apart from group g: the job's own
// where its weights are repacked, else those groups permuted into the repacked layout side by side
// in `staging` (stride: the bytes from one to the next).
const std::byte *groups_for_tiles(const gemm::Job &job, int64_t g, int64_t count, int64_t step,
                                  std::byte *staging, size_t &stride) {
    const size_t group_bytes = job.a_nb1 * kGroupRows;
    const std::byte *first = job.a + size_t(g) * group_bytes;
    stride = size_t(step) * group_bytes;
    if (job.a_grouped) return first;
    if (step == 1) {
        repack_rows(job.a_type, first, staging, count * kGroupRows, job.a_nb1);
    } else {
        for (int64_t i = 0; i < count; ++i) {
            repack_rows(job.a_type, first + size_t(i) * stride, staging + size_t(i) * group_bytes,
                        kGroupRows, job.a_nb1);
        }
    }
    stride = group_bytes;
    return staging;
}

// Phase 2 for rows [16 * g0, 16 * g1) of one job, whose panels start at `panels`.
void multiply_groups(const gemm::Job &job, const Format &f, int64_t K, int64_t g0, int64_t g1,
                     const std::byte *panels, float *out, std::byte *staging) {
    const int64_t n_blocks = K / f.block;
    const size_t col_bytes = column_bytes(f, K);
    const size_t group_bytes = job.a_nb1 * kGroupRows;
    // Generation's one column, nothing to keep in L2: the run's parts side by side in stream
    // tiles, the groups left over in the single-group tiles below.
    const StreamParts run(g0, g1, streams_of(job, f));
    for (int64_t g = run.start(0); g < run.start(1); ++g) {
        size_t stride = 0;
        const std::byte *groups =
            groups_for_tiles(job, g, kStreamGroups, run.part, staging, stride);
        f.streams(groups, stride, n_blocks, panels, out);
        for (int s = 0; s < kStreamGroups; ++s) {
            std::memcpy(job.cols.dst_row(0) + (g + s * run.part) * kGroupRows, out + s * kGroupRows,
                        kGroupRows * sizeof(float));
        }
    }
    const int64_t row_block = row_block_groups(group_bytes);
    for (int64_t gb = run.tail; gb < g1; gb += row_block) {
        const int64_t ge = std::min(g1, gb + row_block);
        size_t stride = 0;
        const std::byte *groups = groups_for_tiles(job, gb, ge - gb, 1, staging, stride);
        for (int64_t j0 = 0; j0 < job.n; j0 += kPanel) {
            const int nc = int(std::min<int64_t>(kPanel, job.n - j0));
            const std::byte *panel = panels + size_t(j0) * col_bytes;
            int64_t g = gb;
            for (; g < ge; ++g) {
                f.tiles[size_t(nc - 1)](groups + size_t(g - gb) * stride, 0, n_blocks, panel, out);
                for (int c = 0; c < nc; ++c) {
                    std::memcpy(job.cols.dst_row(j0 + c) + g * kGroupRows, out + c * kGroupRows,
                                kGroupRows * sizeof(float));
                }
            }
        }
    }
}

}  // namespace

const Format *format(DType type) {
    if (!level_has_layout(type)) return nullptr;
    switch (type) {
        case DType::Q4_0:
            return &kFormatQ4_0;
        case DType::Q4_1:
            return &kFormatQ4_1;
        case DType::Q5_0:
            return &kFormatQ5_0;
        case DType::Q5_1:
            return &kFormatQ5_1;
        case DType::Q8_0:
            return &kFormatQ8_0;
        case DType::Q2_K:
            return &kFormatQ2_K;
        case DType::Q3_K:
            return &kFormatQ3_K;
        case DType::Q4_K:
            return &kFormatQ4_K;
        case DType::Q5_K:
            return &kFormatQ5_K;
        case DType::Q6_K:
            return &kFormatQ6_K;
        case DType::MXFP4:
            return &kFormatMXFP4;
        case DType::IQ4_NL:
            return &kFormatIQ4_NL;
        case DType::IQ4_XS:
            return &kFormatIQ4_XS;
        default:
            return nullptr;
    }
}

size_t shared_size(DType type, int64_t k, int64_t n_columns) {
    return kCounterBytes + size_t(n_columns) * column_bytes(*format(type), k);
}

size_t work_size(DType type, int64_t k) {
    return scratch_layout(*format(type), k).bytes;
}

size_t staging_size(DType type, int64_t k) {
    const size_t group_bytes = row_size(type, k) * kGroupRows;
    return size_t(staged_groups(group_bytes)) * group_bytes;
}

void run(const ComputeParams &params, const gemm::Problem &problem, DType type, std::byte *work) {
    const int64_t K = problem.k;
    if (problem.n_jobs == 0) return;  // the same for every thread, so none waits alone
    const Format &f = *format(type);
    const Scratch s = carve(work, f, K);
    // Chunks are numbered job after job. Each thread's first chunk is its own (chunk ith), the
    // rest are taken in turn from a shared counter; the numbers a thread gets only grow, so it can
    // follow the jobs (their chunk and column offsets) with one cursor.
    int64_t n_max = 0;
    for (int64_t i = 0; i < problem.n_jobs; ++i) {
        n_max = std::max(n_max, problem.job_at(problem.ctx, i).n);
    }
    auto chunks_of = [&](const gemm::Job &job) { return Chunks(job, n_max, params.nth); };
    int64_t total_chunks = 0;
    for (int64_t i = 0; i < problem.n_jobs; ++i) {
        total_chunks += chunks_of(problem.job_at(problem.ctx, i)).count();
    }
    if (params.ith == 0) next_chunk(params).store(params.nth, std::memory_order_relaxed);
    quantize_columns(params, problem, f, s);
    // Generation streams its weights: the first lines of this thread's first chunk are on their
    // way while it waits for the other threads' columns.
    const gemm::Job job0 = problem.job_at(problem.ctx, 0);
    if (n_max <= kStreamColumns && params.ith < chunks_of(job0).count()) {
        const auto [g0, g1] = chunks_of(job0).range(params.ith);
        const size_t group_bytes = job0.a_nb1 * size_t(kGroupRows);
        const int streams = streams_of(job0, f);
        const StreamParts parts(g0, g1, streams);  // as multiply_groups reads them
        for (int s = 0; s < streams; ++s) {
            const std::byte *start = job0.a + size_t(parts.start(s)) * group_bytes;
            for (size_t o = 0; o < kStreamAhead; o += 64) __builtin_prefetch(start + o, 0, 3);
        }
    }
    params.barrier();  // also publishes the counter's reset

    int64_t job_index = 0, first_chunk = 0, first = 0;  // first: columns of the jobs before
    gemm::Job job = problem.job_at(problem.ctx, 0);
    Chunks chunks = chunks_of(job);
    int64_t job_chunks = chunks.count();
    const size_t col_bytes = column_bytes(f, K);
    for (int64_t chunk = params.ith; chunk < total_chunks;
         chunk = next_chunk(params).fetch_add(1, std::memory_order_relaxed)) {
        while (chunk >= first_chunk + job_chunks) {
            first_chunk += job_chunks;
            if (!problem.shared_columns) first += job.n;
            job = problem.job_at(problem.ctx, ++job_index);
            chunks = chunks_of(job);
            job_chunks = chunks.count();
        }
        const auto [g0, g1] = chunks.range(chunk - first_chunk);
        if (job.n > 0) {
            multiply_groups(job, f, K, g0, g1, panels_base(params) + size_t(first) * col_bytes,
                            s.out, s.staging);
        }
    }
}

}  // namespace loom::cpu::inline LOOM_ISA::qgemm
