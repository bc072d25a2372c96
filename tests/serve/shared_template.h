#pragma once
// The source of one of the real chat templates in ../shared/fixtures/chat-templates (its
// template.jinja), for the tests of what servers read from their answers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace loom::serve::testing {

inline std::string shared_template(const std::string &name) {
    const std::filesystem::path path = std::filesystem::path(LOOM_SOURCE_DIR) / ".." / "shared" /
                                       "fixtures" / "chat-templates" / name / "template.jinja";
    std::ifstream in(path);
    if (!in) ADD_FAILURE() << "missing " << path << " (../shared beside the repository)";
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace loom::serve::testing
