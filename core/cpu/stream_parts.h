#pragma once
// How generation walks a run of grouped weights (16-row groups, core/cpu/repack.h) with tiles
// that read several groups in lockstep: the integer tiles (qgemm.cpp) and the F16 / BF16 ones
// (gemm.cpp, gemm_bf16.cpp) cut a run the same way.
#include <cstdint>

namespace loom::cpu {

// The run of groups [g0, g1) cut into `streams` equal parts read side by side, part s from group
// start(s), each front to back, so that a stream's prefetches past the end of its group land on
// the group it reads next. (Adjacent groups side by side left the first prefetch distance of every
// other group unprefetched: docs/PERFORMANCE.md, the Zen 4 section.) The groups from `tail` on,
// fewer than `streams`, are read one at a time; with one stream, all of them are.
struct StreamParts {
    int64_t first;  // the run's first group
    int64_t part;   // groups per part (0 for one stream)
    int64_t tail;   // the first group no part takes

    StreamParts(int64_t g0, int64_t g1, int streams)
        : first(g0), part(streams > 1 ? (g1 - g0) / streams : 0), tail(g0 + streams * part) {}
    int64_t start(int s) const { return first + s * part; }
};

}  // namespace loom::cpu
