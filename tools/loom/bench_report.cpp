#include "tools/loom/bench_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

namespace loom::tools {
namespace {

double mean(const std::vector<double> &v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

// The sample standard deviation (n - 1), 0 for fewer than two samples, as llama-bench reports.
double stddev(const std::vector<double> &v) {
    if (v.size() < 2) return 0.0;
    const double m = mean(v);
    double sq = 0.0;
    for (const double x : v) sq += (x - m) * (x - m);
    return std::sqrt(sq / double(v.size() - 1));
}

std::string size_text(uint64_t bytes) {
    const double mib = double(bytes) / (1024.0 * 1024.0);
    return mib < 1024.0 ? fmt::format("{:.2f} MiB", mib) : fmt::format("{:.2f} GiB", mib / 1024.0);
}

std::string params_text(uint64_t n) {
    if (n >= 1000000000) return fmt::format("{:.2f} B", double(n) / 1e9);
    if (n >= 1000000) return fmt::format("{:.2f} M", double(n) / 1e6);
    return fmt::format("{:.2f} K", double(n) / 1e3);
}

nlohmann::ordered_json to_json(const BenchResult &r, const BenchEnvironment &env) {
    return {{"build_commit", env.build_commit},
            {"build_number", 0},
            {"cpu_info", env.cpu_info},
            {"gpu_info", ""},
            {"backends", "CPU"},
            {"model_filename", r.model_filename},
            {"model_type", r.model_type},
            {"model_size", r.model_size},
            {"model_n_params", r.model_n_params},
            {"n_batch", r.n_batch},
            {"n_ubatch", r.n_ubatch},
            {"n_threads", r.n_threads},
            {"type_k", r.type_k},
            {"type_v", r.type_v},
            {"n_gpu_layers", 0},
            {"flash_attn", r.flash_attn},
            {"use_mmap", true},
            {"embeddings", false},
            {"n_prompt", r.n_prompt},
            {"n_gen", r.n_gen},
            {"n_depth", r.n_depth},
            {"test_time", r.test_time},
            {"avg_ns", uint64_t(std::llround(r.avg_ns()))},
            {"stddev_ns", uint64_t(std::llround(r.stddev_ns()))},
            {"avg_ts", r.avg_ts()},
            {"stddev_ts", r.stddev_ts()},
            {"samples_ns", r.samples_ns},
            {"samples_ts", r.samples_ts()}};
}

}  // namespace

double BenchResult::avg_ns() const {
    return mean(samples_ns);
}
double BenchResult::stddev_ns() const {
    return stddev(samples_ns);
}

std::vector<double> BenchResult::samples_ts() const {
    std::vector<double> ts;
    for (const double ns : samples_ns) ts.push_back(1e9 * double(n_prompt + n_gen) / ns);
    return ts;
}

double BenchResult::avg_ts() const {
    return mean(samples_ts());
}
double BenchResult::stddev_ts() const {
    return stddev(samples_ts());
}

std::string BenchResult::test_name() const {
    const std::string depth = n_depth > 0 ? fmt::format(" @ d{}", n_depth) : "";
    if (n_gen == 0) return fmt::format("pp{}{}", n_prompt, depth);
    if (n_prompt == 0) return fmt::format("tg{}{}", n_gen, depth);
    return fmt::format("pp{}+tg{}{}", n_prompt, n_gen, depth);
}

std::string bench_markdown_header(const BenchColumns &c) {
    std::string names = fmt::format("| {:<30} | {:>10} | {:>10} | {:<7} | {:>7} |", "model", "size",
                                    "params", "backend", "threads");
    std::string rule =
        "| ------------------------------ | ---------: | ---------: | ------- | ------: |";
    if (c.n_batch) names += fmt::format(" {:>7} |", "n_batch"), rule += " ------: |";
    if (c.type_k) names += fmt::format(" {:>6} |", "type_k"), rule += " -----: |";
    if (c.type_v) names += fmt::format(" {:>6} |", "type_v"), rule += " -----: |";
    if (c.flash_attn) names += fmt::format(" {:>2} |", "fa"), rule += " -: |";
    names += fmt::format(" {:>15} | {:>20} |", "test", "t/s");
    rule += " --------------: | -------------------: |";
    return names + "\n" + rule + "\n";
}

std::string bench_markdown_row(const BenchResult &r, const BenchColumns &c) {
    std::string row =
        fmt::format("| {:<30} | {:>10} | {:>10} | {:<7} | {:>7} |", r.model_type,
                    size_text(r.model_size), params_text(r.model_n_params), "CPU", r.n_threads);
    if (c.n_batch) row += fmt::format(" {:>7} |", r.n_batch);
    if (c.type_k) row += fmt::format(" {:>6} |", r.type_k);
    if (c.type_v) row += fmt::format(" {:>6} |", r.type_v);
    if (c.flash_attn) row += fmt::format(" {:>2} |", r.flash_attn ? 1 : 0);
    const std::string ts = fmt::format("{:.2f} ± {:.2f}", r.avg_ts(), r.stddev_ts());
    // fmt pads by code points, and "±" is one
    row += fmt::format(" {:>15} | {:>20} |", r.test_name(), ts);
    return row + "\n";
}

std::string bench_json_object(const BenchResult &r, const BenchEnvironment &env) {
    return to_json(r, env).dump();
}

std::string bench_csv_header(const BenchResult &r, const BenchEnvironment &env) {
    std::string line;
    const nlohmann::ordered_json fields = to_json(r, env);  // items() must not outlive it
    for (const auto &[key, value] : fields.items()) {
        line += (line.empty() ? "" : ",") + key;
    }
    return line + "\n";
}

std::string bench_csv_row(const BenchResult &r, const BenchEnvironment &env) {
    std::string line;
    const nlohmann::ordered_json fields = to_json(r, env);
    for (const auto &[key, value] : fields.items()) {
        std::string field = value.is_string() ? value.get<std::string>() : value.dump();
        // Quoted, inner quotes doubled (RFC 4180), as llama-bench writes every field.
        std::string quoted = "\"";
        for (const char ch : field) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        line += (line.empty() ? "" : ",") + quoted + "\"";
    }
    return line + "\n";
}

}  // namespace loom::tools
