#pragma once
// The quantization mixes `loom quantize` offers: llama.cpp's LLAMA_FTYPE list, limited to the
// mixes whose every tensor type Loom's core can write.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "loom/tensor.h"

namespace loom::engine {

struct FileType {
    const char *name;  // "Q4_K_M", as llama-quantize spells it
    uint32_t id;       // llama.cpp's LLAMA_FTYPE value, written to general.file_type
    DType base;        // the type most 2-D weights get; the mix rules pick others per tensor
};

// Every file type, in llama-quantize's listing order.
std::span<const FileType> file_types();

// The file type named `name` (any letter case), including llama-quantize's aliases "Q3_K",
// "Q4_K" and "Q5_K" for the _M mixes; nullptr when there is none.
const FileType *find_file_type(std::string_view name);

// "Q4_0, Q4_1, ..., F32" for error messages and help.
std::string file_type_names();

}  // namespace loom::engine
