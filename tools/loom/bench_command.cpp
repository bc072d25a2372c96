// `loom bench`: llama-bench's tests with its flags and output shapes. For every model and every
// combination of threads, batch size, flash attention and KV type it runs
//   pp N    a prompt of N tokens in batches of n_batch,
//   tg N    N tokens generated one per decode,
//   pp N+tg M  both, one after the other,
// each -r times on an emptied cache after a warm-up, and reports tokens per second. The tokens
// are random ids (BOS first): tokenization and sampling are not timed.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "loom/cpu.h"
#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/bench_report.h"
#include "tools/loom/commands.h"
#include "tools/loom/model_options.h"

namespace loom::tools {
namespace {

struct BenchOptions {
    std::vector<std::string> models;
    std::vector<int> n_prompt{512};
    std::vector<int> n_gen{128};
    std::vector<std::string> pg;  // "pp,tg" pairs
    std::vector<int> n_depth{0};
    std::vector<int> threads;
    std::vector<int> n_batch{2048};
    std::vector<int> n_ubatch{512};
    std::vector<int> flash_attn{0};
    std::vector<std::string> type_k{"f16"};  // --cache-type-k (-ctk), or --kv-type for both
    std::vector<std::string> type_v{"f16"};  // --cache-type-v (-ctv)
    int repetitions = 5;
    std::string output = "md";
    bool warmup = true;
    bool profile = false;
    bool no_repack = false;
};

// One configuration and test.
struct Instance {
    int n_threads, n_batch, n_ubatch;
    bool flash_attn;
    std::string type_k, type_v;
    int n_prompt, n_gen;
    int n_depth;  // tokens decoded (untimed) before each sample, as llama-bench's -d
};

using Clock = std::chrono::steady_clock;

std::string now_iso8601() {
    const std::time_t t = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&t, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    }
    return "unknown CPU";
}

// A note on stderr when other work competes for the cores: the figures would be low and noisy.
void warn_if_busy() {
    std::ifstream in("/proc/loadavg");
    double load = 0.0;
    if (!(in >> load)) return;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (load > 0.5 * cores) {
        fmt::print(stderr,
                   "loom bench: warning: the load average is {:.2f} on {} cores; other work will "
                   "slow the tests and spread the results\n",
                   load, cores);
    }
}

class Runner {
  public:
    Runner(const engine::Model &model, const Instance &inst, uint32_t seed)
        : model_(model), rng_(seed) {
        const int64_t needed = std::max(1, inst.n_depth + inst.n_prompt + inst.n_gen);
        ctx_ = std::make_unique<engine::Context>(
            model, engine::ContextOptions{.n_ctx = engine::whole_windows(needed),
                                          .n_batch = inst.n_batch,
                                          .n_ubatch = inst.n_ubatch,
                                          .n_threads = inst.n_threads,
                                          .flash_attn = inst.flash_attn,
                                          .type_k = kv_cache_type(inst.type_k, "--cache-type-k"),
                                          .type_v = kv_cache_type(inst.type_v, "--cache-type-v")});
    }

    // One run from an empty cache: n_depth tokens in batches, untimed, then the timed test:
    // n_prompt tokens in batches, then n_gen one at a time.
    double run_ns(int n_depth, int n_prompt, int n_gen) {
        ctx_->memory().clear();
        pos_ = 0;
        if (n_depth > 0) prompt(n_depth);
        backend().set_profiling(profile_);
        const auto start = Clock::now();
        if (n_prompt > 0) prompt(n_prompt);
        for (int i = 0; i < n_gen; ++i) decode({next_token()});
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
        backend().set_profiling(false);
        return ns;
    }
    CpuBackend &backend() { return ctx_->backend(); }
    void set_profile(bool on) { profile_ = on; }
    std::string memory_summary() const { return engine::describe_memory(ctx_->memory()); }

  private:
    int32_t next_token() {
        if (pos_ == 0 && model_.vocab().add_bos()) return model_.vocab().bos();
        return int32_t(rng_() % uint64_t(model_.hparams().n_vocab));
    }
    void prompt(int n) {
        for (int done = 0; done < n;) {
            std::vector<int32_t> tokens;
            while (done < n && int64_t(tokens.size()) < ctx_->options().n_batch) {
                tokens.push_back(next_token());
                ++done;
                ++pos_;
            }
            pos_ -= engine::Pos(tokens.size());
            decode(tokens);
        }
    }
    void decode(const std::vector<int32_t> &tokens) {
        engine::Batch batch;
        for (size_t i = 0; i < tokens.size(); ++i) {
            batch.add(tokens[i], pos_++, 0, i + 1 == tokens.size());
        }
        ctx_->decode(batch);
    }

    const engine::Model &model_;
    std::mt19937_64 rng_;
    std::unique_ptr<engine::Context> ctx_;
    engine::Pos pos_ = 0;
    bool profile_ = false;  // time each node of the timed part of every run (--profile)
};

// --profile: per kind of node, its share of the test's compute time, per run.
void print_profile(const std::vector<CpuBackend::OpTime> &profile, const Instance &inst, int runs) {
    double total = 0.0;
    for (const auto &t : profile) total += t.seconds;
    fmt::print(stderr,
               "profile of pp{} tg{} at depth {}, {} thread(s), per run ({:.2f} ms of graph "
               "compute):\n",
               inst.n_prompt, inst.n_gen, inst.n_depth, inst.n_threads, 1e3 * total / runs);
    fmt::print(stderr, "  {:<16} {:>8} {:>8} {:>10} {:>7} {:>10}\n", "node", "count", "steps", "ms",
               "share", "wait ms");
    for (const auto &t : profile) {
        fmt::print(stderr, "  {:<16} {:>8} {:>8} {:>10.3f} {:>6.1f}% {:>10.3f}\n", t.kind,
                   t.count / runs, t.steps / runs, 1e3 * t.seconds / runs,
                   100.0 * t.seconds / total, 1e3 * t.wait_seconds / runs);
    }
}

std::vector<Instance> instances(const BenchOptions &o) {
    std::vector<std::pair<int, int>> tests;
    for (const int p : o.n_prompt) {
        if (p > 0) tests.emplace_back(p, 0);
    }
    for (const int n : o.n_gen) {
        if (n > 0) tests.emplace_back(0, n);
    }
    for (const std::string &pair : o.pg) {
        const size_t comma = pair.find(',');
        int p = 0, n = 0;
        try {
            if (comma == std::string::npos) throw std::invalid_argument(pair);
            p = std::stoi(pair.substr(0, comma));
            n = std::stoi(pair.substr(comma + 1));
        } catch (const std::exception &) {
            fail("bench", "-pg \"{}\": expected two numbers, prompt and generation, as in 512,128",
                 pair);
        }
        if (p <= 0 || n <= 0) fail("bench", "-pg \"{}\": both numbers must be positive", pair);
        tests.emplace_back(p, n);
    }
    std::vector<int> threads = o.threads;
    if (threads.empty()) threads.push_back(int(std::max(1u, std::thread::hardware_concurrency())));
    std::vector<Instance> out;
    for (const int t : threads)
        for (const int b : o.n_batch)
            for (const int ub : o.n_ubatch)
                for (const int fa : o.flash_attn)
                    for (const std::string &tk : o.type_k)
                        for (const std::string &tv : o.type_v)
                            for (const int d : o.n_depth)
                                for (const auto &[p, n] : tests)
                                    out.push_back(
                                        {t, b, std::min(ub, b), fa != 0, tk, tv, p, n, d});
    return out;
}

void run_bench(const BenchOptions &o, const BenchColumns &columns) {
    if (o.repetitions < 1) fail("bench", "-r {}: at least one repetition", o.repetitions);
    for (const int d : o.n_depth) {
        if (d < 0) fail("bench", "-d {}: a depth is a count of tokens, 0 or more", d);
    }
    for (const std::string &kv : o.type_k) kv_cache_type(kv, "--cache-type-k");
    for (const std::string &kv : o.type_v) kv_cache_type(kv, "--cache-type-v");
    warn_if_busy();
    const BenchEnvironment env{.cpu_info = cpu_model_name(), .build_commit = LOOM_BUILD_COMMIT};
    const bool json = o.output == "json";
    bool first_row = true;
    fmt::print(stderr, "CPU: {}; kernels: {}; huge pages: {}\n", env.cpu_info,
               cpu_kernels_description(), huge_pages_policy_name());
    if (o.output == "md") fmt::print("{}", bench_markdown_header(columns));
    if (json) fmt::print("[\n");
    for (const std::string &path : o.models) {
        const auto model = engine::Model::load(path, {.repack = !o.no_repack});
        model->finish_moving_weights();  // the steady state, not the first tokens after a load
        for (const Instance &inst : instances(o)) {
            Runner runner(*model, inst, 1234);
            if (o.warmup) runner.run_ns(0, std::min(inst.n_prompt, 32), inst.n_gen > 0 ? 1 : 0);
            BenchResult r{.model_filename = std::filesystem::path(path).filename().string(),
                          .model_type = model->description(),
                          .model_size = model->size_bytes(),
                          .model_n_params = model->n_params(),
                          .n_batch = inst.n_batch,
                          .n_ubatch = inst.n_ubatch,
                          .n_threads = inst.n_threads,
                          .type_k = inst.type_k,
                          .type_v = inst.type_v,
                          .flash_attn = inst.flash_attn,
                          .n_prompt = inst.n_prompt,
                          .n_gen = inst.n_gen,
                          .n_depth = inst.n_depth,
                          .test_time = now_iso8601(),
                          .samples_ns = {}};
            runner.set_profile(o.profile);  // after the warm-up
            for (int i = 0; i < o.repetitions; ++i) {
                r.samples_ns.push_back(runner.run_ns(inst.n_depth, inst.n_prompt, inst.n_gen));
            }
            if (o.profile) print_profile(runner.backend().take_profile(), inst, o.repetitions);
            fmt::print(stderr, "loom bench: KV cache of {}: {}\n", r.test_name(),
                       runner.memory_summary());
            if (o.output == "md") fmt::print("{}", bench_markdown_row(r, columns));
            if (o.output == "csv" && first_row) fmt::print("{}", bench_csv_header(r, env));
            if (o.output == "csv") fmt::print("{}", bench_csv_row(r, env));
            if (o.output == "jsonl") fmt::print("{}\n", bench_json_object(r, env));
            if (json) fmt::print("{}  {}", first_row ? "" : ",\n", bench_json_object(r, env));
            first_row = false;
            std::fflush(stdout);
        }
    }
    if (json) fmt::print("\n]\n");
}

}  // namespace

void add_bench_command(CLI::App &app, int &exit_code) {
    CLI::App *command =
        app.add_subcommand("bench", "measure prompt and generation speed, as llama-bench does");
    auto o = std::make_shared<BenchOptions>();
    command->add_option("-m,--model", o->models, "GGUF model files (comma list or repeated)")
        ->required()
        ->delimiter(',');
    command->add_option("-p,--n-prompt", o->n_prompt, "prompt lengths (pp tests)")
        ->delimiter(',')
        ->capture_default_str();
    command->add_option("-n,--n-gen", o->n_gen, "generation lengths (tg tests)")
        ->delimiter(',')
        ->capture_default_str();
    command
        ->add_option("-d,--n-depth", o->n_depth,
                     "context depths: tokens in the cache before each test starts")
        ->delimiter(',')
        ->capture_default_str();
    command->add_option("--pg", o->pg, "prompt,generation pairs, e.g. 512,128 (pg tests)");
    command->add_option("-t,--threads", o->threads, "thread counts (default: one per core)")
        ->delimiter(',');
    command->add_option("-b,--batch-size", o->n_batch, "batch sizes")
        ->delimiter(',')
        ->capture_default_str();
    command->add_option("--ubatch-size", o->n_ubatch, "ubatch sizes")
        ->delimiter(',')
        ->capture_default_str();
    command->add_option("--flash-attn", o->flash_attn, "flash attention, 0 or 1")
        ->delimiter(',')
        ->capture_default_str();
    command->add_option("--cache-type-k", o->type_k, "KV cache K types (-ctk): f16, f32, q8_0, ...")
        ->delimiter(',')
        ->capture_default_str();
    command->add_option("--cache-type-v", o->type_v, "KV cache V types (-ctv)")
        ->delimiter(',')
        ->capture_default_str();
    command
        ->add_option_function<std::vector<std::string>>(
            "--kv-type",
            [o](const std::vector<std::string> &types) { o->type_k = o->type_v = types; },
            "KV cache types of both K and V")
        ->delimiter(',');
    command->add_option("-r,--repetitions", o->repetitions, "runs of each test")
        ->capture_default_str();
    command->add_option("-o,--output", o->output, "output format")
        ->capture_default_str()
        ->check(CLI::IsMember({"md", "json", "jsonl", "csv"}));
    command->add_flag("!--no-warmup", o->warmup, "skip the warm-up run");
    command->add_flag("--no-repack", o->no_repack,
                      "keep block-format weights in the file's layout (as loom run --no-repack)");
    command->add_flag("--profile", o->profile,
                      "print to stderr where each test's time goes, per kind of node");
    command->callback([command, o, &exit_code] {
        const BenchColumns columns{
            .n_batch = command->count("-b") > 0,
            .flash_attn = command->count("--flash-attn") > 0,
            .type_k = command->count("--kv-type") > 0 || command->count("--cache-type-k") > 0,
            .type_v = command->count("--kv-type") > 0 || command->count("--cache-type-v") > 0};
        run_bench(*o, columns);
        exit_code = 0;
    });
}

}  // namespace loom::tools
