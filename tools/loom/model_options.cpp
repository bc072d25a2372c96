#include "tools/loom/model_options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>

#include "loom/error.h"

namespace loom::tools {

namespace {

// --flash-attn on|off|auto: `auto` is llama.cpp's default (its tools turn flash attention on where
// the backend has the kernel), so on, since the CPU's flash attention takes every attention Loom
// builds.
bool flash_attn_enabled(const std::string &value) {
    return value != "off";
}

// llama.cpp's --logit-bias TOKEN_ID(+|-)BIAS: "15043+1", "15043-0.5", "2-inf" (a ban).
std::pair<int32_t, float> parse_logit_bias(const std::string &text) {
    const size_t sign = text.find_first_of("+-");
    int32_t token = -1;
    float bias = 0.0f;
    try {
        size_t used = 0;
        if (sign == std::string::npos || sign == 0) throw std::invalid_argument("no sign");
        token = std::stoi(text.substr(0, sign), &used);
        if (used != sign || token < 0) throw std::invalid_argument("no id");
        const std::string magnitude = text.substr(sign + 1);
        bias = magnitude == "inf" ? std::numeric_limits<float>::infinity()
                                  : std::stof(magnitude, &used);
        if (magnitude != "inf" && (used != magnitude.size() || !std::isfinite(bias) ||
                                   magnitude[0] == '+' || magnitude[0] == '-'))
            throw std::invalid_argument("no bias");
    } catch (const std::exception &) {
        fail("options", "--logit-bias {}: TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1, 2-inf)",
             text);
    }
    if (text[sign] == '-') bias = -bias;
    if (bias == std::numeric_limits<float>::infinity()) {
        fail("options", "--logit-bias {}: +inf would make the token certain; use a large bias",
             text);
    }
    return {token, bias};
}

}  // namespace

void add_model_options(CLI::App &command, ModelOptions &options, const std::string &default_kv_type,
                       const std::string &default_flash) {
    options.kv_type = default_kv_type;
    options.flash_attn = default_flash;
    command.add_option("-m,--model", options.path, "the GGUF model file")->required();
    command.add_option("-t,--threads", options.n_threads, "compute threads (0: one per core)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    command.add_option("--flash-attn", options.flash_attn, "fused attention kernel (auto: on)")
        ->capture_default_str()
        ->check(CLI::IsMember({"on", "off", "auto"}));
    command.add_option("--kv-type", options.kv_type, "type of the KV cache's K and V")
        ->capture_default_str();
    command.add_option("--cache-type-k", options.cache_type_k,
                       "type of the KV cache's K (-ctk): f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, "
                       "q5_1, iq4_nl; all but f32 and f16 need flash attention");
    command.add_option("--cache-type-v", options.cache_type_v, "type of its V (-ctv), the same");
    command.add_flag("--swa-full", options.swa_full,
                     "sliding-window layers keep a cache as large as the others' (more memory; a "
                     "cut-back conversation never needs its prompt decoded again)");
}

void add_chat_template_options(CLI::App &command, engine::ChatFormatChoice &choice) {
    command.add_option("--chat-template", choice.family_name,
                       "a built-in chat format instead of the model's Jinja template: " +
                           engine::chat_family_names());
    command.add_option("--chat-template-file", choice.template_file,
                       "a Jinja chat template file instead of the model's");
}

void add_sampling_options(CLI::App &command, engine::SamplingParams &sampling) {
    command.add_option("--temp", sampling.temperature, "temperature (0: greedy)")
        ->capture_default_str();
    command.add_option("--top-k", sampling.top_k, "top-k (0: off)")->capture_default_str();
    command.add_option("--top-p", sampling.top_p, "top-p (1: off)")->capture_default_str();
    command.add_option("--min-p", sampling.min_p, "min-p (0: off)")->capture_default_str();
    command.add_option("--typical", sampling.typical_p, "locally typical sampling p (1: off)")
        ->capture_default_str();
    command.add_option_function<std::vector<std::string>>(
        "-l,--logit-bias",
        [&sampling](const std::vector<std::string> &entries) {
            for (const std::string &e : entries) sampling.logit_bias.push_back(parse_logit_bias(e));
        },
        "add BIAS to a token's logit, TOKEN_ID+BIAS or TOKEN_ID-BIAS (2-inf bans it); repeatable");
    command.add_option("--repeat-penalty", sampling.repeat_penalty, "repeat penalty (1: off)")
        ->capture_default_str();
    command.add_option("--seed", sampling.seed, "seed of the draws (default: random)");
}

int64_t context_size(const char *command, int64_t requested, bool given,
                     const engine::HParams &hp) {
    if (requested == 0) return hp.n_ctx_train;
    const int64_t n_ctx_max = hp.n_ctx_max();
    if (requested <= n_ctx_max) return requested;
    if (given) {
        fmt::print(stderr,
                   "loom {}: warning: --ctx-size {} is above the model's training context "
                   "(with its RoPE scaling); using {}\n",
                   command, requested, n_ctx_max);
    }
    return n_ctx_max;
}

DType kv_cache_type(const std::string &name, const char *flag) {
    const std::optional<DType> type = dtype_from_name(name);
    if (!type) fail("options", "{} {}: not a type (f32, f16, bf16, q8_0, q4_0, ...)", flag, name);
    return *type;
}

engine::ContextOptions context_options(const ModelOptions &options) {
    const DType both = kv_cache_type(options.kv_type, "--kv-type");
    const auto either = [&](const std::string &name, const char *flag) {
        return name.empty() ? both : kv_cache_type(name, flag);
    };
    return {.n_threads = options.n_threads,
            .flash_attn = flash_attn_enabled(options.flash_attn),
            .type_k = either(options.cache_type_k, "--cache-type-k"),
            .type_v = either(options.cache_type_v, "--cache-type-v"),
            .swa_full = options.swa_full};
}

void add_context_shift_options(CLI::App &command, bool &context_shift, int32_t &n_keep,
                               const char *otherwise) {
    command.add_flag("--context-shift", context_shift,
                     fmt::format("at a full context, drop the older half of the tokens after "
                                 "--keep and go on (instead of {})",
                                 otherwise));
    command.add_option("--keep", n_keep, "prompt tokens a context shift keeps")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
}

std::string read_text_file(const std::string &path, const char *module, const char *what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(module, "cannot read the {} file '{}'", what, path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace loom::tools
