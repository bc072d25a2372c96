// Generation against the memory bound, token by token: each generated token is paired with the
// fastest of the read loops (bench/read_loop.h, one pass of each) over as many bytes as the token
// reads (every tensor of the file but the token embeddings, unless they are the output too), on as
// many threads. The pair runs within ~100 ms, so both see the same memory: on a host whose read
// bandwidth jumps between 43 and 80 GB/s from one minute to the next (docs/PERFORMANCE.md), a bound
// measured before and after a run can be another regime than the run's; a paired one cannot. The
// pairs alternate which goes first, with 5 ms between (the thread pools' workers poll 2 ms after a
// run before they sleep, so neither side's spinning slows the other).
//
// Prints, per file: tokens/s, the token's and the loop's GB/s (medians), and the token's share of
// the loop's rate (the median of the pairs' ratios, with the 10th and 90th percentiles).
// Usage: loom-bench-bound [-t THREADS] [-n TOKENS] [-d DEPTH] MODEL.gguf...
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/read_loop.h"
#include "engine/context/context.h"
#include "loom/backend.h"

namespace {

using namespace loom;
using Clock = std::chrono::steady_clock;

double seconds_of(const std::function<void()> &work) {
    const auto start = Clock::now();
    work();
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

// The bytes a generated token reads from the file's tensors: all but the token embeddings, of
// which it reads one row, unless there is no output matrix and they are the LM head too.
uint64_t bytes_per_token(const gguf::File &file) {
    bool has_output = false;
    for (const gguf::TensorInfo &t : file.tensors()) has_output |= t.name == "output.weight";
    uint64_t bytes = 0;
    for (const gguf::TensorInfo &t : file.tensors()) {
        if (t.name != "token_embd.weight" || !has_output) bytes += t.nbytes;
    }
    return bytes;
}

void measure(const std::string &path, int n_threads, int n_tokens, int depth) {
    const auto model = engine::Model::load(path);
    model->finish_moving_weights();
    const uint64_t bytes = bytes_per_token(model->file());
    engine::Context ctx(
        *model, engine::ContextOptions{.n_ctx = engine::whole_windows(depth + n_tokens + 16),
                                       .n_batch = 512,
                                       .n_ubatch = 512,
                                       .n_threads = n_threads});
    std::mt19937_64 rng(1);
    const auto token = [&] { return int32_t(rng() % uint64_t(model->hparams().n_vocab)); };
    engine::Pos pos = 0;
    // The context's depth (untimed), in batches.
    for (int done = 0; done < depth;) {
        engine::Batch batch;
        for (; done < depth && batch.size() < 512; ++done) batch.add(token(), pos++, 0, false);
        ctx.decode(batch);
    }

    const size_t n_floats = size_t(bytes / sizeof(float));
    const std::unique_ptr<Buffer> memory = host_buffer_type().allocate(n_floats * sizeof(float));
    float *data = static_cast<float *>(memory->base());
    cpu::ThreadPool pool(n_threads);
    pool.run(n_threads, [&](int ith, int n) {  // first touch by the threads that read
        const size_t b = n_floats * size_t(ith) / size_t(n);
        const size_t e = n_floats * size_t(ith + 1) / size_t(n);
        for (size_t i = b; i < e; ++i) data[i] = float(i & 1023) * 1e-3f;
    });
    std::vector<float> sink;
    const auto generate = [&] {
        engine::Batch batch;
        batch.add(token(), pos++, 0, true);
        ctx.decode(batch);
    };
    const auto read = [&] {
        return bench::fastest_read_seconds(pool, n_threads, data, n_floats, sink);
    };
    generate();  // warm: the graph built, the caches of the first token
    read();

    std::vector<double> token_s, read_s, ratios;
    const auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); };
    for (int i = 0; i < n_tokens; ++i) {
        double t = 0, r = 0;
        if (i % 2 == 0) {
            pause();
            t = seconds_of(generate);
            pause();
            r = read();
        } else {
            pause();
            r = read();
            pause();
            t = seconds_of(generate);
        }
        token_s.push_back(t);
        read_s.push_back(r);
        ratios.push_back(r / t);  // the token's rate over the loop's, for the same bytes
    }
    const double gb = double(bytes) * 1e-9;
    fmt::print("| {} | {} | {:.2f} | {:.1f} | {:.1f} | **{:.1f} %** ({:.1f}–{:.1f}) |\n",
               path.substr(path.find_last_of('/') + 1), depth, 1.0 / quantile(token_s, 0.5),
               gb / quantile(token_s, 0.5), gb / quantile(read_s, 0.5),
               100.0 * quantile(ratios, 0.5), 100.0 * quantile(ratios, 0.1),
               100.0 * quantile(ratios, 0.9));
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    const auto usage = [] {
        fmt::print(stderr,
                   "usage: loom-bench-bound [-t THREADS] [-n TOKENS] [-d DEPTH] MODEL.gguf...\n");
        return 2;
    };
    int n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    int n_tokens = 64;
    int depth = 0;
    std::vector<std::string> paths;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if ((arg == "-t" || arg == "-n" || arg == "-d") && i + 1 < argc) {
            const int value = std::atoi(argv[++i]);
            (arg == "-t" ? n_threads : arg == "-n" ? n_tokens : depth) = value;
        } else if (!arg.empty() && arg[0] != '-') {
            paths.push_back(arg);
        } else {
            return usage();
        }
    }
    if (paths.empty() || n_threads < 1 || n_tokens < 1 || depth < 0) {
        return usage();
    }
    fmt::print(
        "| model | depth | t/s | token GB/s | read loop GB/s | token / loop, paired (p10–p90) "
        "|\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    try {
        for (const std::string &path : paths) measure(path, n_threads, n_tokens, depth);
    } catch (const std::exception &e) {
        fmt::print(stderr, "loom-bench-bound: {}\n", e.what());
        return 1;
    }
    return 0;
}
