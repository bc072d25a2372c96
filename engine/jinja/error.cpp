#include "engine/jinja/error.h"

#include <fmt/format.h>

namespace loom::engine::jinja {

TemplateError::TemplateError(const std::string &message, int line, int column, bool raised)
    : loom::Error(fmt::format("[jinja] line {}, column {}: {}", line, column, message)),
      message_(message),
      line_(line),
      column_(column),
      raised_(raised) {}

}  // namespace loom::engine::jinja
