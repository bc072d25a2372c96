#include "tools/loom/serve/request.h"

#include <fmt/format.h>

#include <limits>

#include "loom/engine.h"

namespace loom::serve {
namespace {

[[noreturn]] void bad(const std::string &param, const std::string &message) {
    throw RequestError(400, param, message);
}

const nlohmann::json *field(const nlohmann::json &body, const char *name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

// A number within [lo, hi] (or absent: the default stays).
void read_number(const nlohmann::json &body, const char *name, double lo, double hi, float &out) {
    const nlohmann::json *v = field(body, name);
    if (v == nullptr) return;
    if (!v->is_number()) bad(name, fmt::format("'{}' must be a number", name));
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
        bad(name, fmt::format("'{}' is {}; it must be in [{}, {}]", name, x, lo, hi));
    out = float(x);
}

template <typename Int>
void read_integer(const nlohmann::json &body, const char *name, int64_t lo, int64_t hi, Int &out) {
    const nlohmann::json *v = field(body, name);
    if (v == nullptr) return;
    if (!v->is_number_integer()) bad(name, fmt::format("'{}' must be an integer", name));
    const auto x = v->get<int64_t>();
    if (x < lo || x > hi)
        bad(name, fmt::format("'{}' is {}; it must be in [{}, {}]", name, x, lo, hi));
    out = Int(x);
}

// OpenAI allows a string or up to 4 strings.
std::vector<std::string> read_stop(const nlohmann::json &body) {
    const nlohmann::json *v = field(body, "stop");
    if (v == nullptr) return {};
    if (v->is_string()) return {v->get<std::string>()};
    if (!v->is_array() || v->size() > 4) bad("stop", "'stop' must be a string or up to 4 strings");
    std::vector<std::string> out;
    for (const auto &s : *v) {
        if (!s.is_string()) bad("stop", "'stop' must be a string or up to 4 strings");
        out.push_back(s.get<std::string>());
    }
    return out;
}

// Text content: a string, or an array of {"type": "text", "text": ...} parts.
std::string message_content(const nlohmann::json &content, size_t i) {
    const std::string param = fmt::format("messages[{}].content", i);
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) bad(param, fmt::format("'{}' must be a string or text parts", param));
    std::string text;
    for (const auto &part : content) {
        const auto type = part.is_object() ? part.find("type") : part.end();
        if (!part.is_object() || type == part.end() || *type != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
            bad(param, fmt::format("'{}' may only hold parts of type \"text\"", param));
        }
        text += part["text"].get<std::string>();
    }
    return text;
}

std::vector<ChatMessage> read_messages(const nlohmann::json &body) {
    const nlohmann::json *v = field(body, "messages");
    if (v == nullptr) bad("messages", "'messages' is required");
    if (!v->is_array() || v->empty()) bad("messages", "'messages' must be a non-empty array");
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < v->size(); ++i) {
        const auto &m = (*v)[i];
        const std::string param = fmt::format("messages[{}]", i);
        if (!m.is_object()) bad(param, fmt::format("'{}' must be an object", param));
        const auto role = m.find("role");
        if (role == m.end() || !role->is_string())
            bad(param + ".role", fmt::format("'{}.role' must be a string", param));
        const std::string r = role->get<std::string>();
        if (r != "system" && r != "user" && r != "assistant" && r != "developer" && r != "tool") {
            bad(param + ".role",
                fmt::format("'{}.role' is \"{}\"; it must be system, user, assistant or tool",
                            param, r));
        }
        // An assistant message that calls tools may come without content.
        const auto calls = m.find("tool_calls");
        const bool has_calls = calls != m.end() && !calls->is_null();
        if (has_calls && (r != "assistant" || !calls->is_array())) {
            bad(param + ".tool_calls",
                fmt::format("'{}.tool_calls' must be an array, on an assistant message", param));
        }
        const auto content = m.find("content");
        const bool no_content = content == m.end() || content->is_null();
        if (no_content && !has_calls) {
            bad(param + ".content", fmt::format("'{}.content' is required", param));
        }
        out.push_back({r == "developer" ? "system" : r,
                       no_content ? std::string() : message_content(*content, i)});
    }
    return out;
}

// OpenAI's {"<token id>": bias} (a key that is not a number is llama-server's text), or
// llama-server's [[token id or text, bias or false], ...]; biases in OpenAI's [-100, 100].
std::vector<LogitBias> read_logit_bias(const nlohmann::json &body) {
    const nlohmann::json *v = field(body, "logit_bias");
    if (v == nullptr) return {};
    const char *shape =
        "'logit_bias' must map token ids to numbers in [-100, 100] (or be a list of "
        "[token id or text, number or false] pairs)";
    auto entry = [&](const nlohmann::json &key, const nlohmann::json &bias) {
        LogitBias out;
        if (bias.is_boolean() && !bias.get<bool>()) {
            out.bias = -std::numeric_limits<float>::infinity();
        } else if (bias.is_number() && bias.get<double>() >= -100.0 &&
                   bias.get<double>() <= 100.0) {
            out.bias = bias.get<float>();
        } else {
            bad("logit_bias", shape);
        }
        if (key.is_number_integer()) {
            out.token = key.get<int64_t>();
        } else if (key.is_string()) {
            const std::string k = key.get<std::string>();
            const bool digits = !k.empty() && k.size() <= 10 &&
                                k.find_first_not_of("0123456789") == std::string::npos;
            if (digits) {
                out.token = std::stoll(k);
            } else {
                out.text = k;
            }
        } else {
            bad("logit_bias", shape);
        }
        if (out.token < -1 || (out.token == -1 && out.text.empty())) bad("logit_bias", shape);
        return out;
    };
    std::vector<LogitBias> out;
    if (v->is_object()) {
        for (const auto &[key, bias] : v->items()) out.push_back(entry(key, bias));
    } else if (v->is_array()) {
        for (const auto &pair : *v) {
            if (!pair.is_array() || pair.size() != 2) bad("logit_bias", shape);
            out.push_back(entry(pair[0], pair[1]));
        }
    } else {
        bad("logit_bias", shape);
    }
    return out;
}

// Whether `object` is an object whose `key` is the string `want` (any string when empty).
bool has_string(const nlohmann::json &object, const char *key, std::string_view want = {}) {
    if (!object.is_object()) return false;
    const auto it = object.find(key);
    return it != object.end() && it->is_string() &&
           (want.empty() ? !it->get_ref<const std::string &>().empty()
                         : it->get_ref<const std::string &>() == want);
}

// OpenAI's tools ([{"type": "function", "function": {"name", "description", "parameters"}}])
// and tool_choice ("none", "auto", "required", or {"type": "function", "function": {"name"}}).
void read_tools(const nlohmann::json &body, CompletionRequest &r) {
    if (const nlohmann::json *tools = field(body, "tools")) {
        if (!tools->is_array()) bad("tools", "'tools' must be an array");
        for (size_t i = 0; i < tools->size(); ++i) {
            const nlohmann::json &t = (*tools)[i];
            const std::string param = fmt::format("tools[{}]", i);
            const bool ok = has_string(t, "type", "function") && t.contains("function") &&
                            has_string(t["function"], "name");
            if (!ok) {
                bad(param, fmt::format("'{}' must be {{\"type\": \"function\", \"function\": "
                                       "{{\"name\": ...}}}}",
                                       param));
            }
            const nlohmann::json &function = t["function"];
            const auto parameters = function.find("parameters");
            if (parameters != function.end() && !parameters->is_null() &&
                !parameters->is_object()) {
                bad(param + ".function.parameters",
                    fmt::format("'{}.function.parameters' must be a JSON Schema object", param));
            }
        }
        r.tools = *tools;
    }
    const nlohmann::json *choice = field(body, "tool_choice");
    if (choice == nullptr) return;
    const char *shape =
        "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
        "\"function\": {\"name\": ...}}";
    if (choice->is_string()) {
        r.tool_choice = choice->get<std::string>();
        if (r.tool_choice != "none" && r.tool_choice != "auto" && r.tool_choice != "required") {
            bad("tool_choice", shape);
        }
    } else if (has_string(*choice, "type", "function") && choice->contains("function") &&
               has_string((*choice)["function"], "name")) {
        r.tool_choice = "function";
        r.tool_choice_name = (*choice)["function"]["name"].get<std::string>();
        bool known = false;
        for (const auto &t : r.tools) known |= t["function"]["name"] == r.tool_choice_name;
        if (!known) {
            bad("tool_choice", fmt::format("'tool_choice' names '{}', which is not among the tools",
                                           r.tool_choice_name));
        }
    } else {
        bad("tool_choice", shape);
    }
    if (r.tool_choice == "required" && r.tools.empty()) {
        bad("tool_choice", "'tool_choice' is \"required\" but there are no tools");
    }
}

// Well-formed UTF-8 (RFC 3629): no stray continuation bytes, no overlong forms, no surrogates,
// nothing past U+10FFFF.
bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const size_t len = c < 0x80                ? 1
                           : c >= 0xC2 && c < 0xE0 ? 2
                           : c >= 0xE0 && c < 0xF0 ? 3
                           : c >= 0xF0 && c < 0xF5 ? 4
                                                   : 0;
        if (len == 0 || i + len > s.size()) return false;
        uint32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
        for (size_t k = 1; k < len; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

}  // namespace

void read_bool(const nlohmann::json &body, const char *name, bool &out) {
    const nlohmann::json *v = field(body, name);
    if (v == nullptr) return;
    if (!v->is_boolean()) bad(name, fmt::format("'{}' must be true or false", name));
    out = v->get<bool>();
}

nlohmann::json parse_json_body(const std::string &body) {
    // JSON text is UTF-8 (RFC 8259), and the prompt's bytes would otherwise reach the tokenizer.
    if (!valid_utf8(body)) bad("", "the body is not valid UTF-8");
    try {
        return nlohmann::json::parse(body);
    } catch (const nlohmann::json::exception &e) {  // parse_error, or out_of_range (1e999)
        bad("", fmt::format("the body is not valid JSON: {}", e.what()));
    }
}

engine::ChatRender chat_inputs(const std::string &body) {
    // Read again in the body's own key order: a template that prints a tool's JSON schema with
    // tojson gives the client's order, as transformers does.
    const engine::jinja::Value v = engine::jinja::parse_json(body);
    engine::ChatRender chat;
    const engine::jinja::Value *messages = v.is_dict() ? v.dict().find("messages") : nullptr;
    if (messages == nullptr) bad("messages", "'messages' is required");
    std::vector<engine::jinja::Value> renamed;
    const engine::jinja::Value normalized = engine::normalize_chat_messages(*messages);
    for (const engine::jinja::Value &m : normalized.items()) {
        const engine::jinja::Value *role = m.dict().find("role");
        if (role == nullptr || !role->is_string() || role->str() != "developer") {
            renamed.push_back(m);
            continue;
        }
        engine::jinja::Dict as_system = m.dict();  // OpenAI's developer role is the system's
        as_system.set(engine::jinja::Value("role"), engine::jinja::Value("system"));
        renamed.push_back(engine::jinja::Value::dict(std::move(as_system)));
    }
    chat.messages = engine::jinja::Value::list(std::move(renamed));
    const engine::jinja::Value *tools = v.dict().find("tools");
    if (tools != nullptr && tools->is_list() && !tools->items().empty()) chat.tools = *tools;
    chat.add_generation_prompt = true;
    chat.now = engine::local_time_now();
    return chat;
}

CompletionRequest parse_completion_request(const nlohmann::json &body, bool chat) {
    if (!body.is_object()) bad("", "the body must be a JSON object");
    CompletionRequest r;
    r.chat = chat;
    if (chat) {
        r.messages = read_messages(body);
        read_tools(body, r);
    } else {
        const nlohmann::json *p = field(body, "prompt");
        if (p == nullptr) bad("prompt", "'prompt' is required");
        if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
            r.prompt = (*p)[0].get<std::string>();
        } else if (p->is_string()) {
            r.prompt = p->get<std::string>();
        } else {
            bad("prompt", "'prompt' must be a string");
        }
    }
    engine::SamplingParams &s = r.sampling;
    read_number(body, "temperature", 0.0, 2.0, s.temperature);
    read_number(body, "top_p", 0.0, 1.0, s.top_p);
    read_number(body, "min_p", 0.0, 1.0, s.min_p);
    read_number(body, "typical_p", 0.0, 1.0, s.typical_p);
    read_number(body, "presence_penalty", -2.0, 2.0, s.presence_penalty);
    read_number(body, "frequency_penalty", -2.0, 2.0, s.frequency_penalty);
    read_number(body, "repeat_penalty", 0.01, 10.0, s.repeat_penalty);
    read_integer(body, "top_k", 0, 1 << 30, s.top_k);
    read_integer(body, "seed", 0, std::numeric_limits<int64_t>::max(), s.seed);
    read_integer(
        body, chat && field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens",
        1, 1 << 30, r.max_tokens);
    read_integer(body, "n", 1, kMaxAnswers, r.n);
    r.stop = read_stop(body);
    read_bool(body, "stream", r.stream);
    read_bool(body, "cache_prompt", r.cache_prompt);
    r.logit_bias = read_logit_bias(body);
    if (const nlohmann::json *f = field(body, "reasoning_format")) {
        const std::string format = f->is_string() ? f->get<std::string>() : "";
        if (format != "none" && format != "deepseek" && format != "auto") {
            bad("reasoning_format",
                "'reasoning_format' must be \"none\", \"deepseek\" or \"auto\"");
        }
        r.split_reasoning = format != "none";
    }
    if (const nlohmann::json *so = field(body, "stream_options")) {
        if (!so->is_object()) bad("stream_options", "'stream_options' must be an object");
        if (!r.stream)
            bad("stream_options", "'stream_options' is only allowed with 'stream': true");
        const nlohmann::json *usage = field(*so, "include_usage");
        if (usage != nullptr && !usage->is_boolean()) {
            bad("stream_options.include_usage",
                "'stream_options.include_usage' must be true or false");
        }
        r.include_usage = usage != nullptr && usage->get<bool>();
    }
    if (chat) {
        read_bool(body, "logprobs", r.logprobs);
        read_integer(body, "top_logprobs", 0, 20, r.top_logprobs);
        if (r.top_logprobs > 0 && !r.logprobs) {
            bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        }
    } else if (const nlohmann::json *lp = field(body, "logprobs")) {
        // Completions: logprobs is the number of alternatives, 0..5.
        if (!lp->is_number_integer()) bad("logprobs", "'logprobs' must be an integer");
        read_integer(body, "logprobs", 0, 5, r.top_logprobs);
        r.logprobs = true;
    }
    // llama-server's n_probs: that many alternatives per token, in the route's logprobs shape.
    int n_probs = 0;
    read_integer(body, "n_probs", 0, 20, n_probs);
    if (n_probs > 0) {
        r.logprobs = true;
        r.top_logprobs = n_probs;
    }
    return r;
}

std::vector<std::pair<int32_t, float>> resolve_logit_bias(const std::vector<LogitBias> &entries,
                                                          const engine::Vocab &vocab) {
    std::vector<std::pair<int32_t, float>> out;
    const int64_t n_vocab = vocab.n_tokens();
    for (const LogitBias &e : entries) {
        if (e.token >= n_vocab) {
            bad("logit_bias", fmt::format("'logit_bias' names token {}; the vocabulary has {} "
                                          "(ids 0..{})",
                                          e.token, n_vocab, n_vocab - 1));
        }
        if (e.token >= 0) {
            out.emplace_back(int32_t(e.token), e.bias);
            continue;
        }
        for (const int32_t t : vocab.tokenize(e.text, false, false)) out.emplace_back(t, e.bias);
    }
    return out;
}

std::optional<engine::grammar::Grammar> output_grammar(const std::string &body) {
    using ordered = nlohmann::ordered_json;
    const ordered v = ordered::parse(body, nullptr, false);  // parse_json_body has checked it
    if (!v.is_object()) return std::nullopt;
    std::string param, gbnf;
    auto from = [&](const char *name, const std::string &text) {
        if (!param.empty()) {
            bad(name,
                fmt::format("'{}' and '{}': give one way to constrain the output", param, name));
        }
        param = name;
        gbnf = text;
    };
    // A schema's grammar; a refused schema is the client's mistake, a 400 naming the field.
    auto schema_grammar = [](const ordered &schema, const char *name) {
        if (!schema.is_object() && !schema.is_boolean()) {
            bad(name, fmt::format("'{}' must be a JSON Schema (an object)", name));
        }
        try {
            return engine::grammar::json_schema_to_gbnf(schema.dump());
        } catch (const Error &e) {
            bad(name, e.what());
        }
    };
    // A member of an object, or null (nlohmann iterators of different objects do not compare).
    auto member = [](const ordered &object, const char *name) -> const ordered * {
        if (!object.is_object()) return nullptr;
        const auto it = object.find(name);
        return it == object.end() || it->is_null() ? nullptr : &*it;
    };
    if (const ordered *rf = member(v, "response_format")) {
        const ordered *type = member(*rf, "type");
        const char *types =
            "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"";
        if (type == nullptr || !type->is_string()) bad("response_format", types);
        const std::string t = type->get<std::string>();
        if (t == "json_object") {
            const ordered *schema = member(*rf, "schema");  // llama.cpp's
            from("response_format",
                 schema_grammar(schema == nullptr ? ordered{{"type", "object"}} : *schema,
                                "response_format.schema"));
        } else if (t == "json_schema") {
            const ordered *js = member(*rf, "json_schema");
            const ordered *schema = js == nullptr ? nullptr : member(*js, "schema");
            if (schema == nullptr) {
                bad("response_format", "'response_format.json_schema.schema' is required");
            }
            from("response_format", schema_grammar(*schema, "response_format.json_schema.schema"));
        } else if (t != "text") {
            bad("response_format", types);
        }
    }
    if (const ordered *js = member(v, "json_schema"))
        from("json_schema", schema_grammar(*js, "json_schema"));
    if (const ordered *g = member(v, "grammar")) {
        if (!g->is_string()) bad("grammar", "'grammar' must be a string of GBNF");
        from("grammar", g->get<std::string>());
    }
    if (param.empty()) return std::nullopt;
    try {
        return engine::grammar::parse_gbnf(gbnf);
    } catch (const Error &e) {
        bad(param, e.what());
    }
}

}  // namespace loom::serve
