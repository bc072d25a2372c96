// The C++ API from a program built against the installed headers and library, as a user would
// (check_c_api.sh: `pkg-config --cflags --libs loom-cpp`): llama.cpp's tokens and greedy run for
// a fixture through Model, Vocab, Context, Batch and Sampler, and an engine error caught by its
// type across the library boundary.
//
// usage: cpp_api_test MODEL PROMPT TOKENS GREEDY_TOKENS (comma-separated ids, from case.json)
#include <loom/engine.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<int32_t> parse_ids(const std::string &text) {
    std::vector<int32_t> ids;
    std::stringstream in(text);
    for (std::string id; std::getline(in, id, ',');) ids.push_back(int32_t(std::stoi(id)));
    return ids;
}

int failures = 0;

void check(bool ok, const std::string &what) {
    if (!ok) {
        std::fprintf(stderr, "cpp_api_test: failed: %s\n", what.c_str());
        ++failures;
    }
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: cpp_api_test MODEL PROMPT TOKENS GREEDY_TOKENS\n");
        return 2;
    }
    const std::vector<int32_t> want_prompt = parse_ids(argv[3]), want_greedy = parse_ids(argv[4]);
    try {
        const auto model = loom::engine::Model::load(argv[1]);
        const std::vector<int32_t> prompt =
            model->vocab().tokenize(argv[2], /*add_special=*/true, /*parse_special=*/false);
        check(prompt == want_prompt, "the prompt's tokens are llama.cpp's");

        loom::engine::ContextOptions options;
        options.n_ctx = 256;
        loom::engine::Context ctx(*model, options);
        loom::engine::Batch batch;
        for (size_t i = 0; i < prompt.size(); ++i) {
            batch.add(prompt[i], loom::engine::Pos(i), 0, i + 1 == prompt.size());
        }
        ctx.decode(batch);
        loom::engine::SamplingParams params;
        params.temperature = 0.0f;  // greedy
        loom::engine::Sampler greedy(params);
        std::vector<int32_t> got;
        for (size_t i = 0; i < want_greedy.size(); ++i) {
            const int32_t token = greedy.sample(ctx.logits(0));
            greedy.accept(token);
            got.push_back(token);
            loom::engine::Batch next;
            next.add(token, loom::engine::Pos(prompt.size() + i), 0, true);
            ctx.decode(next);
        }
        check(got == want_greedy, "the greedy run is llama.cpp's");
    } catch (const loom::Error &e) {
        check(false, std::string("no error expected: ") + e.what());
    }

    bool caught = false;
    try {
        loom::engine::Model::load("/nonexistent/model.gguf");
    } catch (const loom::Error &e) {
        caught = std::string(e.what()).find("/nonexistent/model.gguf") != std::string::npos;
    }
    check(caught, "a missing file throws loom::Error naming it");

    if (failures == 0) std::printf("cpp_api_test: the C++ API from the installed files works\n");
    return failures == 0 ? 0 : 1;
}
