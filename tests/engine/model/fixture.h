#pragma once
// A case of ../shared/fixtures (format: its README.md): the model, the tokens, llama.cpp's logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/context/context.h"

namespace loom::engine::test {

struct Fixture {
    std::filesystem::path dir;
    nlohmann::json json;
    std::string model_path;
    std::vector<int32_t> tokens;
    std::vector<float> logits;  // [n_tokens][n_vocab]
    int64_t n_vocab = 0;

    std::span<const float> row(int64_t i) const {
        return {logits.data() + i * n_vocab, size_t(n_vocab)};
    }
};

inline std::filesystem::path fixtures_root() {
    return std::filesystem::path(LOOM_SOURCE_DIR).parent_path() / "shared" / "fixtures";
}

// Loads case `name`; fails the test (with the path) when ../shared is missing.
inline Fixture load_fixture(const std::string &name) {
    Fixture f;
    f.dir = fixtures_root() / name;
    std::ifstream in(f.dir / "case.json");
    if (!in) {
        ADD_FAILURE() << "missing fixture " << (f.dir / "case.json")
                      << ": the tests need ../shared/fixtures beside the repository";
        return f;
    }
    f.json = nlohmann::json::parse(in);
    f.model_path = (f.dir / f.json["model"].get<std::string>()).lexically_normal().string();
    f.tokens = f.json["tokens"].get<std::vector<int32_t>>();
    f.n_vocab = f.json["n_vocab"].get<int64_t>();
    if (f.json.contains("logits_file")) {
        std::ifstream bin(f.dir / f.json["logits_file"].get<std::string>(), std::ios::binary);
        f.logits.resize(f.tokens.size() * size_t(f.n_vocab));
        bin.read(reinterpret_cast<char *>(f.logits.data()),
                 std::streamsize(f.logits.size() * sizeof(float)));
    }
    return f;
}

// Every position's logits of `tokens` decoded as sequence 0 in one batch, row after row.
inline std::vector<float> all_logits(Context &ctx, const std::vector<int32_t> &tokens,
                                     SeqId seq = 0, bool embeddings = false) {
    Batch batch;
    for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], Pos(i), seq, true);
    ctx.decode(batch);
    std::vector<float> out;
    for (int64_t i = 0; i < ctx.n_outputs(); ++i) {
        const auto row = embeddings ? ctx.embeddings(i) : ctx.logits(i);
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

// The same with every position's final state (an encoder's outputs) instead of its logits.
inline std::vector<float> all_embeddings(Context &ctx, const std::vector<int32_t> &tokens,
                                         SeqId seq = 0) {
    return all_logits(ctx, tokens, seq, true);
}

// sum (a - b)^2 / sum b^2, as ggml's test-backend-ops measures error.
// sum (got - want)^2 / sum want^2 (want: floats, or a double-precision reference).
template <typename Want>
double nmse(std::span<const float> got, std::span<const Want> want) {
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
        err += (double(got[i]) - double(want[i])) * (double(got[i]) - double(want[i]));
        ref += double(want[i]) * double(want[i]);
    }
    return err / ref;
}
inline double nmse(std::span<const float> got, std::span<const float> want) {
    return nmse<float>(got, want);
}

// The id of the largest logit (the first of equal ones): a greedy choice.
inline int32_t argmax(std::span<const float> v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

// The largest logit minus the second largest.
inline float top2_gap(std::span<const float> v) {
    float first = -std::numeric_limits<float>::infinity(), second = first;
    for (const float x : v) {
        if (x > first) {
            second = first;
            first = x;
        } else if (x > second) {
            second = x;
        }
    }
    return first - second;
}

// Whether two rows of logits are the same bits.
inline bool bit_identical(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

}  // namespace loom::engine::test
