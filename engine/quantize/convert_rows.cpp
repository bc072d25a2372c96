#include "engine/quantize/convert_rows.h"

#include <algorithm>
#include <vector>

#include "engine/model/parallel_tasks.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

// Rows are handed out in chunks of at least this many elements, so that small tensors do not
// pay for threads (llama.cpp uses the same minimum chunk, 32 * 512).
constexpr int64_t kMinChunkElements = 32 * 512;

}  // namespace

void convert_rows(DType from, const void *src, DType to, void *dst, int64_t ne0, int64_t n_rows,
                  int n_threads) {
    const DTypeTraits &in = traits(from);
    const DTypeTraits &out = traits(to);
    LOOM_ASSERT(in.to_float != nullptr && out.from_float != nullptr);
    const size_t in_row = row_size(from, ne0);
    const size_t out_row = row_size(to, ne0);
    const int64_t chunk_rows = std::max<int64_t>(1, kMinChunkElements / ne0);
    const int64_t n_chunks = (n_rows + chunk_rows - 1) / chunk_rows;
    run_tasks(size_t(n_chunks), size_t(std::max(n_threads, 1)), [&](size_t c) {
        std::vector<float> row(from == DType::F32 ? 0 : size_t(ne0));
        const int64_t end = std::min(n_rows, int64_t(c + 1) * chunk_rows);
        for (int64_t r = int64_t(c) * chunk_rows; r < end; ++r) {
            const auto *src_row = static_cast<const char *>(src) + r * in_row;
            const float *values = reinterpret_cast<const float *>(src_row);
            if (from != DType::F32) {
                in.to_float(src_row, row.data(), ne0);
                values = row.data();
            }
            out.from_float(values, static_cast<char *>(dst) + r * out_row, ne0);
        }
    });
}

}  // namespace loom::engine
