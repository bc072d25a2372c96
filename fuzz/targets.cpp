#include "fuzz/targets.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <type_traits>

#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_chat.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"
#include "engine/jinja/builtins.h"
#include "engine/jinja/template.h"
#include "loom/error.h"
#include "loom/gguf.h"
#include "tools/loom/serve/embeddings.h"
#include "tools/loom/serve/functionary.h"
#include "tools/loom/serve/harmony.h"
#include "tools/loom/serve/reasoning.h"
#include "tools/loom/serve/request.h"
#include "tools/loom/serve/rerank.h"
#include "tools/loom/serve/tool_calls.h"

namespace loom::fuzz {

std::vector<std::unique_ptr<engine::Vocab>> load_vocabularies(const std::string &root) {
    std::vector<std::unique_ptr<engine::Vocab>> out;
    const std::filesystem::path dir = std::filesystem::path(root) / "../shared/models/vocab";
    std::vector<std::filesystem::path> files;
    for (const auto &entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() == ".gguf") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    // Every vocabulary there loads (WordPiece and Unigram too): one that does not is a bug.
    for (const auto &path : files) {
        const gguf::File file(path.string());
        out.push_back(std::make_unique<engine::Vocab>(engine::Vocab::from_gguf(file)));
    }
    if (out.empty()) fail("fuzz", "no vocabularies in {}", dir.string());
    return out;
}

void tokenizer_one_input(const std::vector<std::unique_ptr<engine::Vocab>> &vocabs,
                         const uint8_t *data, size_t size) {
    if (size == 0) return;
    const engine::Vocab &vocab = *vocabs[data[0] % vocabs.size()];
    const bool add_special = (data[0] & 0x40) != 0, parse_special = (data[0] & 0x80) != 0;
    const std::string_view text(reinterpret_cast<const char *>(data + 1), size - 1);
    const std::vector<int32_t> ids = vocab.tokenize(text, add_special, parse_special);
    for (const int32_t id : ids) {
        if (id < 0 || id >= vocab.n_tokens()) fail("fuzz", "tokenize gave id {}", id);
        vocab.token_to_piece(id, true);
    }
    vocab.detokenize(ids, parse_special);
    // The same bytes as ids, most of them out of range: detokenize refuses those cleanly.
    std::vector<int32_t> raw((size - 1) / 4);
    if (!raw.empty()) std::memcpy(raw.data(), data + 1, raw.size() * 4);
    try {
        vocab.detokenize(raw, true);
    } catch (const Error &) {
    }
}

// The answer parsers (<think> and <tool_call> blocks) on `text` as if a model wrote it: the text
// cut in two at `cut` must give the parts the whole text gives, else a chunk boundary would change
// what a client sees.
template <typename Parser, typename Arg>
void check_cut(const std::string &text, size_t cut, Arg arg) {
    Parser whole(arg), halves(arg);
    auto a = whole.push(text);
    const auto a_rest = whole.finish();
    auto b = halves.push(std::string_view(text).substr(0, cut));
    const auto b_mid = halves.push(std::string_view(text).substr(cut));
    const auto b_rest = halves.finish();
    if (a.content + a_rest.content != b.content + b_mid.content + b_rest.content) std::abort();
    if constexpr (requires { a.reasoning; }) {
        if (a.reasoning + a_rest.reasoning != b.reasoning + b_mid.reasoning + b_rest.reasoning)
            std::abort();
    }
    if constexpr (requires { a.calls; }) {
        // finish() gives the calls of forms whose blocks end with the answer.
        a.calls.insert(a.calls.end(), a_rest.calls.begin(), a_rest.calls.end());
        b.calls.insert(b.calls.end(), b_mid.calls.begin(), b_mid.calls.end());
        b.calls.insert(b.calls.end(), b_rest.calls.begin(), b_rest.calls.end());
        if (a.calls.size() != b.calls.size()) std::abort();
        for (size_t i = 0; i < a.calls.size(); ++i) {
            if (a.calls[i].name != b.calls[i].name || a.calls[i].arguments != b.calls[i].arguments)
                std::abort();
        }
    }
}

// A WordPiece vocabulary for the embeddings and rerank requests (../shared beside LOOM_ROOT, or the
// working directory), or null where it is not there.
const engine::Vocab *embedding_vocab() {
    static const std::unique_ptr<engine::Vocab> vocab = []() -> std::unique_ptr<engine::Vocab> {
        const char *root = std::getenv("LOOM_ROOT");
        const std::filesystem::path path = std::filesystem::path(root != nullptr ? root : ".") /
                                           "../shared/models/vocab/ggml-vocab-bert-bge.gguf";
        if (!std::filesystem::exists(path)) return nullptr;
        return std::make_unique<engine::Vocab>(engine::Vocab::from_gguf(gguf::File(path.string())));
    }();
    return vocab.get();
}

void request_one_input(const uint8_t *data, size_t size) {
    const std::string body(reinterpret_cast<const char *>(data), size);
    if (const engine::Vocab *vocab = embedding_vocab()) {
        try {
            serve::parse_embedding_request(serve::parse_json_body(body), *vocab, 384, 512);
        } catch (const serve::RequestError &) {
        }
        try {  // pairs joined by the vocabulary, and by a rerank prompt
            const std::string_view prompt = size % 2 == 0 ? "" : "<s>{query}</s>{document}";
            serve::parse_rerank_request(serve::parse_json_body(body), *vocab, prompt, 512);
        } catch (const serve::RequestError &) {
        }
    }
    // Each tool call form in turn, by the input's size (the body stays all JSON).
    constexpr serve::ToolCallForm kForms[] = {
        serve::ToolCallForm::hermes,       serve::ToolCallForm::llama3_json,
        serve::ToolCallForm::mistral_list, serve::ToolCallForm::mistral_args,
        serve::ToolCallForm::granite,      serve::ToolCallForm::deepseek_r1,
        serve::ToolCallForm::deepseek_v31, serve::ToolCallForm::command_r,
        serve::ToolCallForm::command_r7b,  serve::ToolCallForm::harmony,
        serve::ToolCallForm::qwen3_coder,  serve::ToolCallForm::glm,
        serve::ToolCallForm::minimax_m2,   serve::ToolCallForm::kimi_k2,
        serve::ToolCallForm::nemotron_v2,  serve::ToolCallForm::functionary_v32};
    const serve::ToolCallForm form = kForms[size % std::size(kForms)];
    for (const bool chat : {false, true}) {
        try {
            const serve::CompletionRequest r =
                serve::parse_completion_request(serve::parse_json_body(body), chat);
            if (chat) {
                engine::render_chat(engine::ChatFamily::chatml, r.messages, true);
                serve::chat_inputs(body);
                if (!r.tools.empty()) {
                    serve::tool_call_grammar(form, r.tools, r.tool_choice_name, size % 3 == 0);
                }
            }
        } catch (const serve::RequestError &) {
        } catch (const Error &) {  // chat_inputs: values past the engine's bounds
        }
    }
    const size_t cut = size == 0 ? 0 : data[0] % (size + 1);
    check_cut<serve::ReasoningSplit>(body, cut, size % 2 == 1);
    if (form == serve::ToolCallForm::harmony) {
        check_cut<serve::HarmonyParser>(body, cut, size % 4 < 2);
    } else if (form == serve::ToolCallForm::functionary_v32) {
        check_cut<serve::FunctionaryParser>(body, cut, size % 4 < 2);
    } else {
        check_cut<serve::ToolCallParser>(body, cut, form);
    }
}

void chat_template_one_input(const uint8_t *data, size_t size) {
    if (size == 0) return;
    // The first byte picks the family (one render per input keeps executions cheap, and the
    // fuzzer reaches every family through that byte); the rest is the messages.
    static const std::vector<engine::ChatFamily> families = [] {
        std::vector<engine::ChatFamily> out;
        const std::string names = engine::chat_family_names();  // "chatml, llama2, ..."
        for (size_t at = 0; at < names.size();) {
            const size_t end = std::min(names.find(", ", at), names.size());
            const auto family =
                engine::chat_family_from_name(std::string_view(names).substr(at, end - at));
            if (!family) fail("fuzz", "unknown family in '{}'", names);
            out.push_back(*family);
            at = end + 2;
        }
        return out;
    }();
    const engine::ChatFamily family = families[data[0] % families.size()];
    const bool add_generation_prompt = (data[0] & 0x80) != 0;
    const std::string_view bytes(reinterpret_cast<const char *>(data + 1), size - 1);
    std::vector<engine::ChatMessage> messages;
    static constexpr std::string_view kRoles[] = {"system", "user", "assistant", "tool", ""};
    size_t start = 0, i = 0;
    while (start <= bytes.size()) {
        const size_t end = std::min(bytes.find('\0', start), bytes.size());
        messages.push_back({std::string(kRoles[i++ % std::size(kRoles)]),
                            std::string(bytes.substr(start, end - start))});
        start = end + 1;
    }
    try {
        engine::render_chat(family, messages, add_generation_prompt);
    } catch (const Error &) {
    }
}

void jinja_one_input(const uint8_t *data, size_t size) {
    static const engine::jinja::Value kMessages = engine::chat_messages_from_json(R"([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris? {{ not_a_variable }}"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "assistant", "content": [{"type": "text", "text": "18C, sunny."}]}])");
    static const engine::jinja::Value kTools = engine::chat_tools_from_json(R"([
        {"type": "function", "function": {"name": "get_weather", "description": "Weather now",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]}}}])");
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    const size_t split = std::min(bytes.find('\0'), bytes.size());
    engine::ChatRender chat;
    chat.messages = kMessages;
    chat.tools = kTools;
    chat.add_generation_prompt = (size & 1) != 0;
    if (split < bytes.size()) {
        try {
            chat.messages = engine::chat_messages_from_json(bytes.substr(split + 1));
        } catch (const Error &) {  // not messages: the fixed conversation
        }
    }
    // A few thousand steps of work at most: hostile loops fail fast instead of slowing the run.
    engine::jinja::RenderLimits limits;
    limits.max_output_bytes = 1 << 20;
    limits.max_loop_iterations = 20000;
    limits.max_steps = 200000;
    try {
        const engine::jinja::Template jinja(bytes.substr(0, split));
        jinja.render({{"messages", chat.messages},
                      {"tools", chat.tools},
                      {"add_generation_prompt", engine::jinja::Value(chat.add_generation_prompt)},
                      {"bos_token", engine::jinja::Value("<s>")},
                      {"eos_token", engine::jinja::Value("</s>")},
                      {"raise_exception", engine::jinja::raise_exception_function()},
                      {"strftime_now", engine::jinja::strftime_now_function(std::tm{})}},
                     limits);
    } catch (const Error &) {
    }
}

namespace {

// `text` read by a matcher of `grammar` in pieces of 1 to 4 bytes (the first byte of each piece
// sets its length), each asked about before it is read, as a sampler would.
void read_in_pieces(const engine::grammar::Grammar &grammar, std::string_view text) {
    engine::grammar::Matcher matcher(grammar);
    for (size_t i = 0; i < text.size();) {
        const size_t length = std::min<size_t>(uint8_t(text[i]) % 4 + 1, text.size() - i);
        const std::string_view piece = text.substr(i, length);
        if (!matcher.allows(piece)) break;
        matcher.accept(piece);
        i += length;
    }
    (void)matcher.can_end();
}

// The bytes before the first 0, and those after it (empty when there is no 0).
std::pair<std::string_view, std::string_view> split_at_zero(const uint8_t *data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    const size_t split = std::min(bytes.find('\0'), bytes.size());
    return {bytes.substr(0, split), split < bytes.size() ? bytes.substr(split + 1) : ""};
}

}  // namespace

void grammar_one_input(const uint8_t *data, size_t size) {
    const auto [grammar, text] = split_at_zero(data, size);
    try {
        read_in_pieces(engine::grammar::parse_gbnf(grammar), text);
    } catch (const Error &) {
    }
}

void json_schema_one_input(const uint8_t *data, size_t size) {
    const auto [schema, text] = split_at_zero(data, size);
    try {
        read_in_pieces(engine::grammar::parse_gbnf(engine::grammar::json_schema_to_gbnf(schema)),
                       text);
    } catch (const Error &) {
    }
}

}  // namespace loom::fuzz
