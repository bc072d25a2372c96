#include "tests/engine/model/fixture_variants.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace loom::engine::test {

const std::vector<FixtureVariant> &fixture_variants() {
    // gemma2's fixture: window 8 on layers 0 and 2 (pattern 2); gemma3's: window 8 on layers 0,
    // 1 and 3 (pattern 3), those layers rotating with base 10000 and the others with 1e6.
    static const std::vector<FixtureVariant> variants = {
        {.name = "gemma2-swa3",
         .fixture = "gemma2",
         .keys = {{"attention.sliding_window", uint32_t(3)}}},
        {.name = "gemma2-swa16",
         .fixture = "gemma2",
         .keys = {{"attention.sliding_window", uint32_t(16)}}},
        {.name = "gemma2-swa-layers",
         .fixture = "gemma2",
         .keys = {{"attention.sliding_window_pattern",
                   gguf::Array{std::vector<bool>{true, false, false, true}}}}},
        {.name = "gemma3-pattern2",
         .fixture = "gemma3",
         .keys = {{"attention.sliding_window_pattern", uint32_t(2)}}},
        // The pattern and rope.freq_base_swa stay in the file: without a window both are unused.
        {.name = "gemma3-no-window", .fixture = "gemma3", .dropped = {"attention.sliding_window"}},
        // Mistral Large 3's attention temperature on DeepSeek's YaRN model: Q of position p
        // scaled by 1 + 0.5 ln(floor(p / 4) + 1), so by up to 2.15 at position 39.
        {.name = "deepseek2-temperature",
         .fixture = "deepseek2-yarn",
         .keys = {{"attention.temperature_scale", 0.5f},
                  {"attention.temperature_length", uint32_t(4)}}},
        // Command R's 2 layers repeated to 4, so that the default pattern 4 leaves the last one
        // attending fully (and without rotary positions).
        {.name = "cohere2",
         .fixture = "command-r",
         .arch = "cohere2",
         .keys = {{"attention.sliding_window", uint32_t(8)}},
         .n_layer = 4},
    };
    return variants;
}

std::vector<size_t> variant_rows() {
    std::vector<size_t> rows;
    for (size_t p = 4; p < kVariantTokens; p += 5) rows.push_back(p);
    return rows;
}

namespace {

// "blk.<il>.<rest>" → il and rest; false for the model's other tensors.
bool split_block_name(const std::string &name, int64_t &il, std::string &rest) {
    if (name.rfind("blk.", 0) != 0) return false;
    const size_t dot = name.find('.', 4);
    if (dot == std::string::npos) return false;
    il = std::stoll(name.substr(4, dot - 4));
    rest = name.substr(dot + 1);
    return true;
}

}  // namespace

void write_fixture_variant(const FixtureVariant &v, const std::string &source_path,
                           const std::string &path) {
    const gguf::File source(source_path);
    const auto &source_arch = source.metadata().get<std::string>("general.architecture");
    const std::string arch = v.arch.empty() ? source_arch : v.arch;
    const std::string source_prefix = source_arch + ".";
    const auto n_layer_source =
        source.metadata().get_integer<int64_t>(source_prefix + "block_count");
    const int64_t n_layer = v.n_layer > 0 ? v.n_layer : n_layer_source;

    gguf::Writer w;
    for (const auto &entry : source.metadata().entries()) {
        if (entry.key == "general.architecture") {
            w.set(entry.key, arch);
        } else if (entry.key.rfind(source_prefix, 0) == 0) {
            const std::string suffix = entry.key.substr(source_prefix.size());
            if (std::ranges::find(v.dropped, suffix) == v.dropped.end()) {
                w.set(arch + "." + suffix, entry.value);
            }
        } else {
            w.set(entry.key, entry.value);
        }
    }
    w.set(arch + ".block_count", uint32_t(n_layer));
    for (const auto &[suffix, value] : v.keys) w.set(arch + "." + suffix, value);

    // Tensors outside the blocks once; the blocks in order, each from its source block.
    for (const gguf::TensorInfo &t : source.tensors()) {
        int64_t il = 0;
        std::string rest;
        if (split_block_name(t.name, il, rest)) continue;
        w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                     source.tensor_data(t).data());
    }
    for (int64_t il = 0; il < n_layer; ++il) {
        for (const gguf::TensorInfo &t : source.tensors()) {
            int64_t from = 0;
            std::string rest;
            if (!split_block_name(t.name, from, rest) || from != il % n_layer_source) continue;
            w.add_tensor(fmt::format("blk.{}.{}", il, rest), t.type,
                         std::vector<int64_t>(t.ne, t.ne + t.n_dims), source.tensor_data(t).data());
        }
    }
    w.write(path);
}

bool keep_variant_files() {
    return std::getenv("LOOM_VARIANTS_DIR") != nullptr;
}

std::filesystem::path variants_dir() {
    if (const char *dir = std::getenv("LOOM_VARIANTS_DIR")) return dir;
    return std::filesystem::temp_directory_path() / ("loom-variants-" + std::to_string(::getpid()));
}

std::string write_variant_model(const FixtureVariant &variant, const Fixture &f) {
    std::filesystem::create_directories(variants_dir());
    const std::string path = (variants_dir() / (variant.name + ".gguf")).string();
    write_fixture_variant(variant, f.model_path, path);
    return path;
}

std::vector<float> variant_logits(Context &ctx, const Fixture &f) {
    const std::vector<int32_t> prefix(f.tokens.begin(), f.tokens.begin() + kVariantTokens);
    const std::vector<float> all = all_logits(ctx, prefix);
    std::vector<float> out;
    for (const size_t p : variant_rows()) {
        const auto row = all.begin() + std::ptrdiff_t(p * size_t(f.n_vocab));
        out.insert(out.end(), row, row + f.n_vocab);
    }
    return out;
}

std::vector<float> fixture_rows(const Fixture &f) {
    std::vector<float> out;
    for (const size_t p : variant_rows()) {
        const auto row = f.row(int64_t(p));
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

std::vector<float> variant_reference(const std::string &name, int64_t n_vocab) {
    const auto path =
        std::filesystem::path(LOOM_SOURCE_DIR) / "tests/engine/model/variants" / (name + ".f32");
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << "missing " << path;
    std::vector<float> out(variant_rows().size() * size_t(n_vocab));
    in.read(reinterpret_cast<char *>(out.data()), std::streamsize(out.size() * sizeof(float)));
    EXPECT_EQ(size_t(in.gcount()), out.size() * sizeof(float)) << path << " is short";
    EXPECT_EQ(in.peek(), EOF) << path << " is longer than " << variant_rows().size() << " rows";
    return out;
}

}  // namespace loom::engine::test
