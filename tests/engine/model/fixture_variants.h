#pragma once
// Models of ../shared/fixtures rewritten with other keys (sliding windows, attention
// temperature, another architecture): the shapes the fixtures themselves lack. llama.cpp's logits
// for each are in tests/engine/model/variants/ (README.md there says how they were made).
#include <filesystem>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "loom/gguf.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine::test {

struct FixtureVariant {
    std::string name;     // also the reference's file name: variants/<name>.f32
    std::string fixture;  // the case of ../shared/fixtures whose model and tokens it takes
    // general.architecture to write, the fixture's "<arch>.*" keys renamed to it ("": the
    // fixture's own)
    std::string arch;
    // "<arch>.<suffix>" keys set, by suffix, and keys left out
    std::vector<std::pair<std::string, gguf::Value>> keys;
    std::vector<std::string> dropped;
    // 0: the fixture's layers; more: block il is a copy of the fixture's block il % n_layer
    int64_t n_layer = 0;
};

// gtest prints a variant by its name.
inline void PrintTo(const FixtureVariant &v, std::ostream *os) {
    *os << v.name;
}

// The variants the references cover.
const std::vector<FixtureVariant> &fixture_variants();

// The references hold the logits of the fixture's first kVariantTokens tokens, decoded in one
// batch, at these positions only (every fifth, from 4), to keep the committed files small: 4
// is past a window of 3 and the first step of a temperature length of 4; 19 to 39 are past a
// window of 16.
inline constexpr size_t kVariantTokens = 40;
std::vector<size_t> variant_rows();

// Writes the fixture's model (at `source_path`) with the variant's keys and blocks to `path`.
void write_fixture_variant(const FixtureVariant &variant, const std::string &source_path,
                           const std::string &path);

// Where the tests write the variants' files: $LOOM_VARIANTS_DIR when set (the files are then
// kept, for llama.cpp: variants/make_references.sh), else a folder of the process's own.
std::filesystem::path variants_dir();
bool keep_variant_files();

// The variant of `f` written into variants_dir(): its path.
std::string write_variant_model(const FixtureVariant &variant, const Fixture &f);

// The rows variant_rows() of the logits of f's first kVariantTokens tokens in one batch.
std::vector<float> variant_logits(Context &ctx, const Fixture &f);
// The same rows of the fixture's own logits (llama.cpp's on the unchanged model).
std::vector<float> fixture_rows(const Fixture &f);
// llama.cpp's: variants/<name>.f32, variant_rows().size() rows of n_vocab.
std::vector<float> variant_reference(const std::string &name, int64_t n_vocab);

}  // namespace loom::engine::test
