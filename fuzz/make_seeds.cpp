// Writes small valid GGUF files into a directory, as seeds for the fuzzer: one with a value of
// every type (and nested and empty arrays), one with a tensor of every dtype at 64-byte alignment.
#include <cstdio>
#include <string>
#include <vector>

#include "loom/gguf.h"

int main(int argc, char **argv) {
    using namespace loom;
    using namespace loom::gguf;
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];

    Writer values;
    values.set("general.architecture", std::string("llama"));
    values.set("u8", uint8_t(1));
    values.set("i8", int8_t(-1));
    values.set("u16", uint16_t(2));
    values.set("i16", int16_t(-2));
    values.set("u32", uint32_t(3));
    values.set("i32", int32_t(-3));
    values.set("f32", 0.5f);
    values.set("bool", true);
    values.set("u64", uint64_t(4));
    values.set("i64", int64_t(-4));
    values.set("f64", 0.25);
    values.set("tokens", Array{std::vector<std::string>{"<s>", "a", ""}});
    values.set("scores", Array{std::vector<float>{0, -1, 2}});
    values.set("flags", Array{std::vector<bool>{true, false}});
    values.set("nested", Array{std::vector<Array>{Array{std::vector<int32_t>{1}},
                                                  Array{std::vector<std::string>{}}}});
    values.write(dir + "/seed-values.gguf");

    Writer tensors;
    tensors.set("general.alignment", uint32_t(64));
    std::vector<std::byte> zeros(1024);
    for (int i = 0; i < kDTypeCount; ++i) {
        const DType type = DType(i);
        tensors.add_tensor(std::string("t.") + dtype_name(type), type,
                           {2 * traits(type).block_size, 3}, zeros.data());
    }
    tensors.write(dir + "/seed-tensors.gguf");
    return 0;
}
