#pragma once
// Helpers of the Jinja engine's tests: a file's bytes, and renders with the variables the shared
// fixtures and the probes use (strftime_now on the fixed time 2026-12-01 00:00:00, a Tuesday).
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "engine/jinja/builtins.h"
#include "engine/jinja/template.h"

namespace loom::engine::jinja::testing {

inline std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::tm fixed_now() {
    std::tm now{};
    now.tm_year = 2026 - 1900;
    now.tm_mon = 11;
    now.tm_mday = 1;
    now.tm_wday = 2;
    now.tm_yday = 334;
    return now;
}

// `source` rendered with `variables`, raise_exception and strftime_now.
inline std::string render(const std::string &source,
                          std::vector<std::pair<std::string, Value>> variables = {},
                          const RenderLimits &limits = {}) {
    variables.emplace_back("raise_exception", raise_exception_function());
    variables.emplace_back("strftime_now", strftime_now_function(fixed_now()));
    return Template(source).render(variables, limits);
}

// The message of the TemplateError that rendering `source` throws, or "" when it renders.
inline std::string render_error(const std::string &source,
                                std::vector<std::pair<std::string, Value>> variables = {},
                                const RenderLimits &limits = {}) {
    try {
        render(source, std::move(variables), limits);
    } catch (const TemplateError &e) {
        return e.what();
    }
    return "";
}

}  // namespace loom::engine::jinja::testing
