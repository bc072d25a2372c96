#pragma once
// The options the model commands share: the model file, the threads and how the context
// computes attention and stores its KV cache.
#include <cstdint>
#include <string>

#include "loom/engine.h"

namespace CLI {
class App;
}

namespace loom::tools {

struct ModelOptions {
    std::string path;
    int n_threads = 0;  // 0: one per core
    std::string flash_attn;
    std::string kv_type;       // --kv-type: K and V
    std::string cache_type_k;  // --cache-type-k (-ctk): K alone; empty: kv_type
    std::string cache_type_v;  // --cache-type-v (-ctv): V alone; empty: kv_type
    bool swa_full = false;     // sliding-window layers keep a full-size cache
};

// Adds -m/--model (required), -t/--threads, --flash-attn on|off|auto (default `default_flash`),
// --kv-type (default `default_kv_type`), --cache-type-k / --cache-type-v (-ctk / -ctv, which
// override it for K or V) and --swa-full to `command`, bound to `options`.
void add_model_options(CLI::App &command, ModelOptions &options, const std::string &default_kv_type,
                       const std::string &default_flash = "auto");

// Adds --chat-template NAME (a built-in format) and --chat-template-file T.jinja, instead of the
// model's own Jinja template.
void add_chat_template_options(CLI::App &command, engine::ChatFormatChoice &choice);

// Adds --temp, --top-k, --top-p, --min-p, --repeat-penalty and --seed to `command`.
void add_sampling_options(CLI::App &command, engine::SamplingParams &sampling);

// Adds --context-shift and --keep N (engine/context/context_shift.h); `otherwise` says what
// happens at a full context without the flag.
void add_context_shift_options(CLI::App &command, bool &context_shift, int32_t &n_keep,
                               const char *otherwise);

// The context for --ctx-size `requested` (0: the model's training context, as llama.cpp), capped
// at the context its positions are meant for (HParams::n_ctx_max: more than the training context
// with YaRN), with a warning on stderr naming `command` when an asked-for size (`given`) is cut.
int64_t context_size(const char *command, int64_t requested, bool given, const engine::HParams &hp);

// ContextOptions with the threads, flash attention and KV types of `options`; the rest default.
// loom::Error for a KV type that is not one (the context checks which it supports).
engine::ContextOptions context_options(const ModelOptions &options);

// The KV cache type named `name` (f32, f16, bf16, q8_0, q4_0, ... as llama.cpp spells them);
// loom::Error naming `flag` for anything else.
DType kv_cache_type(const std::string &name, const char *flag);

// The whole of a text file a flag names; throws loom::Error("[module] cannot read the WHAT file
// 'PATH'") when it cannot be read.
std::string read_text_file(const std::string &path, const char *module, const char *what);

}  // namespace loom::tools
