#include "engine/quantize/file_types.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace loom::engine {
namespace {

// The ids are include/llama.h's LLAMA_FTYPE_* values. Left out: the IQ1-IQ3, TQ* and Q1_0/Q2_0
// mixes (Loom's core has no such block formats) and Q2_K_S, which llama.cpp refuses to make
// without an importance matrix (its Q2_K tensors need one, llama-quant.cpp
// tensor_requires_imatrix).
constexpr std::array kFileTypes{
    FileType{"Q4_0", 2, DType::Q4_0},        FileType{"Q4_1", 3, DType::Q4_1},
    FileType{"MXFP4_MOE", 38, DType::MXFP4}, FileType{"Q5_0", 8, DType::Q5_0},
    FileType{"Q5_1", 9, DType::Q5_1},        FileType{"Q2_K", 10, DType::Q2_K},
    FileType{"Q3_K_S", 11, DType::Q3_K},     FileType{"Q3_K_M", 12, DType::Q3_K},
    FileType{"Q3_K_L", 13, DType::Q3_K},     FileType{"IQ4_NL", 25, DType::IQ4_NL},
    FileType{"IQ4_XS", 30, DType::IQ4_XS},   FileType{"Q4_K_S", 14, DType::Q4_K},
    FileType{"Q4_K_M", 15, DType::Q4_K},     FileType{"Q5_K_S", 16, DType::Q5_K},
    FileType{"Q5_K_M", 17, DType::Q5_K},     FileType{"Q6_K", 18, DType::Q6_K},
    FileType{"Q8_0", 7, DType::Q8_0},        FileType{"F16", 1, DType::F16},
    FileType{"BF16", 32, DType::BF16},       FileType{"F32", 0, DType::F32},
};

// llama-quantize's short names for the medium K mixes (tools/quantize/quantize.cpp).
struct Alias {
    const char *alias;
    const char *name;
};
constexpr std::array kAliases{Alias{"Q3_K", "Q3_K_M"}, Alias{"Q4_K", "Q4_K_M"},
                              Alias{"Q5_K", "Q5_K_M"}};

bool same_name(std::string_view a, std::string_view b) {
    return std::ranges::equal(a, b, [](char x, char y) {
        return std::toupper(static_cast<unsigned char>(x)) ==
               std::toupper(static_cast<unsigned char>(y));
    });
}

}  // namespace

std::span<const FileType> file_types() {
    return kFileTypes;
}

const FileType *find_file_type(std::string_view name) {
    for (const Alias &a : kAliases) {
        if (same_name(name, a.alias)) name = a.name;
    }
    for (const FileType &t : kFileTypes) {
        if (same_name(name, t.name)) return &t;
    }
    return nullptr;
}

std::string file_type_names() {
    std::string names;
    for (const FileType &t : kFileTypes) {
        if (!names.empty()) names += ", ";
        names += t.name;
    }
    for (const Alias &a : kAliases) {
        names += ", ";
        names += a.alias;
    }
    return names;
}

}  // namespace loom::engine
