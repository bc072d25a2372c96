#include "tests/gguf/gguf_test_util.h"

#include <random>

namespace loom::gguf::testing {

std::filesystem::path shared_models_dir() {
    return std::filesystem::path(LOOM_SOURCE_DIR).parent_path() / "shared" / "models";
}

void require_shared_file(const std::filesystem::path &path) {
    ASSERT_TRUE(std::filesystem::is_regular_file(path))
        << path << " is missing: the GGUF tests read the model files in ../shared/models beside "
        << "the repository (see ../shared/models/MODELS.md)";
}

TempDir::TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("loom-gguf-test-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::string parse_error(const std::vector<std::byte> &bytes) {
    try {
        parse(bytes);
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

}  // namespace loom::gguf::testing
