#pragma once
// Row-by-row type conversion of a tensor's data, on several threads.
#include <cstdint>

#include "loom/tensor.h"

namespace loom::engine {

// Converts n_rows rows of ne0 elements from `from` (src) to `to` (dst) through float32, with
// the core's reference quantizers (the bytes llama-quantize writes without an importance
// matrix). Each row is converted on its own, so the bytes do not depend on n_threads. `from`
// must have a to_float conversion and ne0 must fit both types' blocks.
void convert_rows(DType from, const void *src, DType to, void *dst, int64_t ne0, int64_t n_rows,
                  int n_threads);

}  // namespace loom::engine
