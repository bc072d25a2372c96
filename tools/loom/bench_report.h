#pragma once
// The results of `loom bench` and how they are printed: llama-bench's markdown table, JSON, JSON
// lines and CSV, with llama-bench's field names so that scripts written for it read them as is.
#include <cstdint>
#include <string>
#include <vector>

namespace loom::tools {

// One test of one configuration, with a sample per repetition.
struct BenchResult {
    std::string model_filename, model_type;
    uint64_t model_size = 0, model_n_params = 0;
    int n_batch = 0, n_ubatch = 0, n_threads = 0;
    std::string type_k, type_v;
    bool flash_attn = false;
    int n_prompt = 0, n_gen = 0;
    int n_depth = 0;                 // tokens already in the cache when each sample starts
    std::string test_time;           // ISO 8601, UTC
    std::vector<double> samples_ns;  // one per repetition

    double avg_ns() const;
    double stddev_ns() const;
    std::vector<double> samples_ts() const;  // tokens per second of each sample
    double avg_ts() const;
    double stddev_ts() const;
    std::string test_name() const;  // "pp512", "tg128", "pp512+tg128", "tg128 @ d4096"
};

// The machine, printed once per result in the machine-readable formats.
struct BenchEnvironment {
    std::string cpu_info;
    std::string build_commit;
};

// Which columns the markdown table shows beyond model, size, params, backend, threads, test
// and t/s: those the user varied.
struct BenchColumns {
    bool n_batch = false, flash_attn = false, type_k = false, type_v = false;
};

std::string bench_markdown_header(const BenchColumns &columns);
std::string bench_markdown_row(const BenchResult &r, const BenchColumns &columns);
std::string bench_json_object(const BenchResult &r, const BenchEnvironment &env);
std::string bench_csv_header(const BenchResult &r, const BenchEnvironment &env);  // r's fields
std::string bench_csv_row(const BenchResult &r, const BenchEnvironment &env);

}  // namespace loom::tools
