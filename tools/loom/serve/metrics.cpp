#include "tools/loom/serve/metrics.h"

#include <fmt/format.h>

namespace loom::serve {
namespace {

void add(std::string &out, const char *name, const char *type, const char *help, double value) {
    out += fmt::format("# HELP loom_{} {}\n# TYPE loom_{} {}\nloom_{} {}\n", name, help, name, type,
                       name, value);
}

}  // namespace

std::string prometheus_metrics(const SlotSchedulerMetrics &m) {
    std::string out;
    add(out, "prompt_tokens_total", "counter", "Prompt tokens processed.", double(m.prompt_tokens));
    add(out, "tokens_predicted_total", "counter", "Tokens generated.", double(m.generated_tokens));
    add(out, "prompt_seconds_total", "counter",
        "Time spent on prompt tokens (a step mixing prompt and generation shared by token count).",
        m.prompt_seconds);
    add(out, "tokens_predicted_seconds_total", "counter",
        "Time spent on generated tokens (a mixed step shared by token count).",
        m.generation_seconds);
    add(out, "predicted_tokens_seconds", "gauge", "Generated tokens per second of generation.",
        m.generation_seconds > 0 ? double(m.generated_tokens) / m.generation_seconds : 0.0);
    add(out, "kv_cache_usage_ratio", "gauge", "Fraction of the KV cache's cells in use.",
        m.kv_cells > 0 ? double(m.kv_cells_used) / double(m.kv_cells) : 0.0);
    add(out, "kv_cache_tokens", "gauge", "KV cache cells in use.", double(m.kv_cells_used));
    add(out, "requests_processing", "gauge", "Requests holding a slot.",
        double(m.requests_processing));
    add(out, "requests_deferred", "gauge", "Requests waiting for a slot.",
        double(m.requests_queued));
    add(out, "requests_total", "counter", "Requests accepted.", double(m.requests_total));
    add(out, "n_context_shifts_total", "counter", "Context shifts of full slots (--context-shift).",
        double(m.context_shifts));
    return out;
}

}  // namespace loom::serve
