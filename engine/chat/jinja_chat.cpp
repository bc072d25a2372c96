#include "engine/chat/jinja_chat.h"

#include <optional>

#include "engine/jinja/builtins.h"
#include "engine/jinja/json.h"
#include "loom/error.h"

namespace loom::engine {

using jinja::Value;

JinjaChatTemplate::JinjaChatTemplate(std::string_view source, std::string bos_token,
                                     std::string eos_token)
    : template_(source), bos_token_(std::move(bos_token)), eos_token_(std::move(eos_token)) {}

namespace {

// The messages with `change` applied to each (a message it returns none for stays as it is), or
// none if it changed none.
template <typename Change>
std::optional<Value> changed_messages(const Value &messages, Change change) {
    if (!messages.is_list()) return std::nullopt;
    bool changed = false;
    std::vector<Value> out;
    for (const Value &message : messages.items()) {
        std::optional<Value> new_message =
            message.is_dict() ? change(message.dict()) : std::optional<Value>();
        changed = changed || new_message.has_value();
        out.push_back(new_message ? std::move(*new_message) : message);
    }
    if (!changed) return std::nullopt;
    return Value::list(std::move(out));
}

// The messages with every null "content" made "" (null when there is none), or none if no
// message has a null content.
std::optional<Value> with_empty_contents(const Value &messages) {
    return changed_messages(messages, [](const jinja::Dict &message) -> std::optional<Value> {
        const Value *content = message.find("content");
        if (content == nullptr || !content->is_none()) return std::nullopt;
        jinja::Dict new_message = message;
        new_message.set(Value("content"), Value(std::string()));
        return Value::dict(std::move(new_message));
    });
}

// The messages with every tool call's object arguments written back as JSON text (as
// json.dumps writes it), or none if no call has object arguments.
std::optional<Value> with_text_arguments(const Value &messages) {
    jinja::Budget budget(jinja::RenderLimits{}.max_steps);
    return changed_messages(messages, [&](const jinja::Dict &message) -> std::optional<Value> {
        const Value *calls = message.find("tool_calls");
        if (calls == nullptr || !calls->is_list()) return std::nullopt;
        bool changed = false;
        std::vector<Value> new_calls;
        for (const Value &call : calls->items()) {
            const Value *function = call.is_dict() ? call.dict().find("function") : nullptr;
            const Value *arguments = function != nullptr && function->is_dict()
                                         ? function->dict().find("arguments")
                                         : nullptr;
            if (arguments == nullptr || !arguments->is_dict()) {
                new_calls.push_back(call);
                continue;
            }
            jinja::Dict new_function = function->dict();
            new_function.set(Value("arguments"), Value(jinja::to_json(*arguments, {}, budget)));
            jinja::Dict new_call = call.dict();
            new_call.set(Value("function"), Value::dict(std::move(new_function)));
            new_calls.push_back(Value::dict(std::move(new_call)));
            changed = true;
        }
        if (!changed) return std::nullopt;
        jinja::Dict new_message = message;
        new_message.set(Value("tool_calls"), Value::list(std::move(new_calls)));
        return Value::dict(std::move(new_message));
    });
}

}  // namespace

std::string JinjaChatTemplate::render_strict(const ChatRender &chat) const {
    return template_.render({
        {"messages", chat.messages},
        {"tools", chat.tools},
        {"add_generation_prompt", Value(chat.add_generation_prompt)},
        {"bos_token", Value(bos_token_)},
        {"eos_token", Value(eos_token_)},
        {"raise_exception", jinja::raise_exception_function()},
        {"strftime_now", jinja::strftime_now_function(chat.now)},
    });
}

std::string JinjaChatTemplate::render(const ChatRender &chat) const {
    try {
        return render_strict(chat);
    } catch (const jinja::TemplateError &) {
        // What some templates cannot take, given as they can, as llama.cpp does. OpenAI's
        // clients send an assistant turn that made tool calls back with "content": null, which
        // gpt-oss's tests with `"..." in message.content`: it gets "". Arguments are given as
        // objects, which most templates print with |tojson, but Functionary v3.2's adds to a
        // string: it gets them as JSON text. Other failures fail as they did.
        const std::optional<Value> empty = with_empty_contents(chat.messages);
        const std::optional<Value> text = with_text_arguments(empty.value_or(chat.messages));
        for (const std::optional<Value> *retry : {&empty, &text}) {
            if (!retry->has_value()) continue;
            ChatRender again = chat;
            again.messages = **retry;
            try {
                return render_strict(again);
            } catch (const jinja::TemplateError &) {
            }
        }
        throw;
    }
}

namespace {

// A tool call with its function.arguments parsed, when they are a JSON object in a string.
Value with_parsed_arguments(const Value &call) {
    if (!call.is_dict()) return call;
    const Value *function = call.dict().find("function");
    if (function == nullptr || !function->is_dict()) return call;
    const Value *arguments = function->dict().find("arguments");
    if (arguments == nullptr || !arguments->is_string()) return call;
    Value parsed;
    try {
        parsed = jinja::parse_json(arguments->str());
    } catch (const Error &) {
        return call;  // not JSON: the string stays
    }
    if (!parsed.is_dict()) return call;
    jinja::Dict new_function = function->dict();
    new_function.set(Value("arguments"), parsed);
    jinja::Dict new_call = call.dict();
    new_call.set(Value("function"), Value::dict(std::move(new_function)));
    return Value::dict(std::move(new_call));
}

}  // namespace

Value normalize_chat_messages(const Value &messages) {
    if (!messages.is_list()) fail("chat", "the messages must be a JSON array");
    std::vector<Value> out;
    out.reserve(messages.items().size());
    for (const Value &message : messages.items()) {
        if (!message.is_dict()) fail("chat", "each message must be a JSON object");
        const Value *calls = message.dict().find("tool_calls");
        if (calls == nullptr || !calls->is_list()) {
            out.push_back(message);
            continue;
        }
        std::vector<Value> new_calls;
        for (const Value &call : calls->items()) new_calls.push_back(with_parsed_arguments(call));
        jinja::Dict new_message = message.dict();
        new_message.set(Value("tool_calls"), Value::list(std::move(new_calls)));
        out.push_back(Value::dict(std::move(new_message)));
    }
    return Value::list(std::move(out));
}

Value chat_messages_from_json(std::string_view json) {
    return normalize_chat_messages(jinja::parse_json(json));
}

Value chat_tools_from_json(std::string_view json) {
    const Value tools = jinja::parse_json(json);
    if (tools.is_none() || (tools.is_list() && tools.items().empty())) return Value::none();
    if (!tools.is_list()) fail("chat", "the tools must be a JSON array");
    return tools;
}

std::tm local_time_now() {
    const std::time_t t = std::time(nullptr);
    std::tm now{};
    localtime_r(&t, &now);
    return now;
}

}  // namespace loom::engine
