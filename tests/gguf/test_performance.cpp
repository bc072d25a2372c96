// Opening a 1 GB model maps it and reads only the header and directory: well under a second.
// Disabled in the default run because it writes 1 GB; run it with
//   loom-gguf-tests --gtest_also_run_disabled_tests --gtest_filter='GgufPerformance.*'
// It leaves the file at $TMPDIR/loom-gguf-perf-1gb.gguf for timing `loom gguf dump` by hand
// (docs/PERFORMANCE.md); delete it afterwards.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include "tests/gguf/gguf_test_util.h"

namespace loom::gguf {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Drops the file's pages from the page cache, so that opening it reads from the disk.
void evict_from_page_cache(const std::string &path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

TEST(GgufPerformance, DISABLED_OpenOneGigabyteModel) {
    // TinyLlama's shapes in F16 with 9 of its 22 layers: 1.06 GB, 83 tensors.
    constexpr int64_t n_vocab = 32000, n_embd = 2048, n_embd_kv = 256, n_ff = 5632, n_layer = 9;
    const std::vector<std::byte> zeros(size_t(n_vocab * n_embd * 2));
    Writer w;
    w.set("general.architecture", std::string("llama"));
    w.set("llama.block_count", uint32_t(n_layer));
    std::vector<std::string> tokens(n_vocab);
    for (int64_t i = 0; i < n_vocab; ++i) tokens[size_t(i)] = "token" + std::to_string(i);
    w.set("tokenizer.ggml.tokens", Array{tokens});
    w.set("tokenizer.ggml.scores", Array{std::vector<float>(n_vocab)});
    w.add_tensor("token_embd.weight", DType::F16, {n_embd, n_vocab}, zeros.data());
    for (int il = 0; il < n_layer; ++il) {
        const auto name = [&](const char *what) {
            return fmt::format("blk.{}.{}.weight", il, what);
        };
        w.add_tensor(name("attn_norm"), DType::F32, {n_embd}, zeros.data());
        w.add_tensor(name("attn_q"), DType::F16, {n_embd, n_embd}, zeros.data());
        w.add_tensor(name("attn_k"), DType::F16, {n_embd, n_embd_kv}, zeros.data());
        w.add_tensor(name("attn_v"), DType::F16, {n_embd, n_embd_kv}, zeros.data());
        w.add_tensor(name("attn_output"), DType::F16, {n_embd, n_embd}, zeros.data());
        w.add_tensor(name("ffn_norm"), DType::F32, {n_embd}, zeros.data());
        w.add_tensor(name("ffn_gate"), DType::F16, {n_embd, n_ff}, zeros.data());
        w.add_tensor(name("ffn_up"), DType::F16, {n_embd, n_ff}, zeros.data());
        w.add_tensor(name("ffn_down"), DType::F16, {n_ff, n_embd}, zeros.data());
    }
    w.add_tensor("output_norm.weight", DType::F32, {n_embd}, zeros.data());
    w.add_tensor("output.weight", DType::F16, {n_embd, n_vocab}, zeros.data());

    const std::string path =
        (std::filesystem::temp_directory_path() / "loom-gguf-perf-1gb.gguf").string();
    auto start = std::chrono::steady_clock::now();
    w.write(path);
    const double write_s = seconds_since(start);
    ASSERT_NO_FATAL_FAILURE(evict_from_page_cache(path));

    start = std::chrono::steady_clock::now();
    const File file(path);
    const double open_s = seconds_since(start);
    start = std::chrono::steady_clock::now();
    const std::string text = format_text(file.contents());
    const double dump_s = seconds_since(start);

    EXPECT_GT(file.bytes().size(), uint64_t(1000000000));
    EXPECT_EQ(file.tensors().size(), size_t(3 + 9 * n_layer));
    EXPECT_LT(open_s, 0.25);
    EXPECT_LT(dump_s, 0.25);
    std::printf(
        "%s: %.2f GB, written in %.2f s; opened (page cache dropped) in %.1f ms; "
        "described in %.1f ms\n",
        path.c_str(), double(file.bytes().size()) / 1e9, write_s, open_s * 1e3, dump_s * 1e3);
}

}  // namespace
}  // namespace loom::gguf
