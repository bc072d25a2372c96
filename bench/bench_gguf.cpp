// Opening a 1 GB model: mmap plus header and directory validation, without reading tensor
// data, and formatting what `loom gguf dump` prints. The file (TinyLlama's shapes in F16 with 9
// of its 22 layers: 1.06 GB, 84 tensors) is written once to $TMPDIR and removed at exit.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "loom/gguf.h"

namespace loom::gguf {
namespace {

struct OneGigabyteModel {
    std::string path = (std::filesystem::temp_directory_path() / "loom-bench-1gb.gguf").string();

    OneGigabyteModel() {
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
        w.write(path);
    }
    ~OneGigabyteModel() { std::filesystem::remove(path); }
};

const OneGigabyteModel &model() {
    static const OneGigabyteModel m;
    return m;
}

// Drops the file's pages from the page cache, so that opening it reads from the disk.
void evict_from_page_cache(const std::string &path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

void BM_OpenOneGigabyteModel(benchmark::State &state) {
    const std::string &path = model().path;
    for (auto _ : state) {
        state.PauseTiming();
        evict_from_page_cache(path);
        state.ResumeTiming();
        const File file(path);
        benchmark::DoNotOptimize(file.tensors().size());
        state.counters["GB"] = double(file.bytes().size()) / 1e9;
    }
}
BENCHMARK(BM_OpenOneGigabyteModel)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_DumpOneGigabyteModel(benchmark::State &state) {
    const File file(model().path);
    for (auto _ : state) benchmark::DoNotOptimize(format_text(file.contents()));
}
BENCHMARK(BM_DumpOneGigabyteModel)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loom::gguf
