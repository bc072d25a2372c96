#pragma once
// A template that does not parse or fails to render: "[jinja] line L, column C: what".
#include <string>

#include "loom/error.h"

namespace loom::engine::jinja {

class TemplateError : public loom::Error {
  public:
    // `raised`: the template's own raise_exception(message), whose text is `message` exactly.
    TemplateError(const std::string &message, int line, int column, bool raised = false);
    const std::string &message() const { return message_; }
    int line() const { return line_; }
    int column() const { return column_; }
    bool raised() const { return raised_; }

  private:
    std::string message_;
    int line_;
    int column_;
    bool raised_;
};

// A place in the template source, 1-based (the column counts bytes).
struct SourceLocation {
    int line = 1;
    int column = 1;
};

[[noreturn]] inline void syntax_error(const std::string &message, SourceLocation at) {
    throw TemplateError(message, at.line, at.column);
}

}  // namespace loom::engine::jinja
