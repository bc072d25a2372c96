#pragma once
// Quantizing a GGUF file (`loom quantize`): every weight converted to the type its file type's
// mix gives it (tensor_types.h), the metadata copied, written in llama-quantize's layout so that
// the result matches llama-quantize's file byte for byte.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/quantize/file_types.h"
#include "loom/tensor.h"

namespace loom::engine {

struct QuantizeProgress {
    std::string_view tensor;  // the tensor just finished
    size_t tensors_done = 0;
    size_t n_tensors = 0;
    uint64_t bytes_done = 0;  // source tensor bytes processed so far
    uint64_t bytes_total = 0;
};

struct QuantizeOptions {
    const FileType *file_type = nullptr;
    bool pure = false;              // every quantizable tensor in the base type (--pure)
    bool allow_requantize = false;  // convert tensors that are already in a block format
    int n_threads = 0;              // 0: one per hardware thread
    std::function<void(const QuantizeProgress &)> progress;  // after each tensor
};

struct QuantizedTensor {
    std::string name;
    DType from;
    DType to;
    DType wanted;  // the mix's choice; differs from `to` when the rows did not fit its blocks
    int64_t ne0;   // row length
    uint64_t bytes_in;
    uint64_t bytes_out;
};

struct QuantizeReport {
    std::vector<QuantizedTensor> tensors;  // in output order
    uint64_t n_elements = 0;               // over all tensors
    uint64_t bytes_in = 0;                 // tensor data, before and after
    uint64_t bytes_out = 0;
    uint64_t file_bytes_in = 0;
    uint64_t file_bytes_out = 0;
};

// Writes `in_path` quantized to `out_path`. Throws loom::Error on an unreadable input, an
// output that is the input or cannot be written, or a tensor that cannot be converted; no
// output file is left behind then (the file is written under a temporary name and renamed).
QuantizeReport quantize_file(const std::string &in_path, const std::string &out_path,
                             const QuantizeOptions &options);

}  // namespace loom::engine
