#pragma once
// A Jinja chat template, parsed once and rendered per conversation, the way Hugging Face's
// transformers renders tokenizer.chat_template: Jinja2's ImmutableSandboxedEnvironment with
// trim_blocks and lstrip_blocks, the loopcontrols extension (break, continue) and a
// {% generation %} tag that renders its body. The functions range, dict, namespace, cycler and
// joiner are always there; raise_exception and strftime_now are variables the caller passes
// (engine/chat does, as apply_chat_template does).
//
// Every render is bounded (RenderLimits): an input that loops, recurses, or builds values or
// output without end fails with the bound in the message instead of hanging or exhausting memory.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/jinja/error.h"
#include "engine/jinja/value.h"

namespace loom::engine::jinja {

struct Program;

struct RenderLimits {
    int64_t max_output_bytes = int64_t(32) << 20;
    int64_t max_loop_iterations = 1'000'000;  // over the whole render
    int max_call_depth = 100;        // macros, caller() and recursive loops within one another
    int64_t max_steps = 50'000'000;  // nodes evaluated, elements visited, 256-byte string pieces
};

class Template {
  public:
    // TemplateError (with the line and column) when the source does not parse.
    explicit Template(std::string_view source);

    // The text, rendered with `variables` in scope. TemplateError for any failure, raised() for
    // the template's own raise_exception.
    std::string render(const std::vector<std::pair<std::string, Value>> &variables,
                       const RenderLimits &limits = {}) const;

  private:
    std::shared_ptr<const Program> program_;
};

}  // namespace loom::engine::jinja
