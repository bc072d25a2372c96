#pragma once
// A corpus of hostile GGUF files made from one valid file by corrupting one thing at a time, each
// with what the reader's error must mention.
#include <string>
#include <vector>

namespace loom::gguf::testing {

struct HostileFile {
    std::string name;              // what was done to the valid file
    std::vector<std::byte> bytes;  // the file
    std::string expected;          // a regular expression the error message must match
};

// The valid v3 file the corpus is made from: metadata of several types (a string, the
// alignment, a bool, integers, arrays of strings, floats and arrays) and three tensors.
std::vector<std::byte> valid_base_file();

std::vector<HostileFile> hostile_files();

}  // namespace loom::gguf::testing
