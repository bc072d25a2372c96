// The built-in chat formats, rendered by hand. The formats are those of llama.cpp's built-in
// templates (src/llama-chat.cpp).
#include "engine/chat/chat_template.h"

#include <array>

#include "loom/error.h"

namespace loom::engine {

namespace {

std::string_view trim(std::string_view s) {
    constexpr std::string_view kSpace = " \t\n\v\f\r";
    const size_t begin = s.find_first_not_of(kSpace);
    if (begin == std::string_view::npos) return {};
    return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

using Messages = std::span<const ChatMessage>;

std::string render_chatml(ChatFamily, Messages messages, bool add_generation_prompt) {
    std::string out;
    for (const ChatMessage &m : messages) {
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    }
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

// Llama 2 and its variants. The prompt opens with "[INST] " (after the BOS the tokenizer adds);
// every turn closes with the assistant's "</s>", and the next one reopens [INST].
std::string render_llama2(ChatFamily family, Messages messages, bool) {
    const bool system_tags = family != ChatFamily::llama2;
    const bool bos_inside = family == ChatFamily::llama2_sys_bos;
    const bool strip = family == ChatFamily::llama2_sys_strip;
    std::string out = "[INST] ";
    bool inside_turn = true;
    for (const ChatMessage &m : messages) {
        const std::string content(strip ? trim(m.content) : std::string_view(m.content));
        if (!inside_turn) {
            out += bos_inside ? "<s>[INST] " : "[INST] ";
            inside_turn = true;
        }
        if (m.role == "system") {
            out += system_tags ? "<<SYS>>\n" + content + "\n<</SYS>>\n\n" : content + "\n";
        } else if (m.role == "user") {
            out += content + " [/INST]";
        } else {
            out += content + "</s>";
            inside_turn = false;
        }
    }
    return out;
}

std::string render_llama3(ChatFamily, Messages messages, bool add_generation_prompt) {
    std::string out;
    for (const ChatMessage &m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out += std::string(trim(m.content)) + "<|eot_id|>";
    }
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

// Mistral's v1, v3 and v3-tekken formats: the system message opens the first [INST] block.
std::string render_mistral(ChatFamily family, Messages messages, bool) {
    const std::string_view leading = family == ChatFamily::mistral_v1 ? " " : "";
    const std::string_view trailing = family == ChatFamily::mistral_v3_tekken ? "" : " ";
    const bool trim_assistant = family == ChatFamily::mistral_v3;
    std::string out;
    bool inside_turn = false;
    for (const ChatMessage &m : messages) {
        if (!inside_turn) {
            out.append(leading).append("[INST]").append(trailing);
            inside_turn = true;
        }
        if (m.role == "system") {
            out += m.content + "\n\n";
        } else if (m.role == "user") {
            out.append(m.content).append(leading).append("[/INST]");
        } else {
            out.append(trailing).append(trim_assistant ? trim(m.content) : m.content);
            out += "</s>";
            inside_turn = false;
        }
    }
    return out;
}

std::string render_mistral_v7(ChatFamily family, Messages messages, bool) {
    const std::string space = family == ChatFamily::mistral_v7 ? " " : "";
    std::string out;
    for (const ChatMessage &m : messages) {
        if (m.role == "system") {
            out += "[SYSTEM_PROMPT]" + space + m.content + "[/SYSTEM_PROMPT]";
        } else if (m.role == "user") {
            out += "[INST]" + space + m.content + "[/INST]";
        } else {
            out += space + m.content + "</s>";
        }
    }
    return out;
}

// Phi-3 and Zephyr differ only in the end-of-message token.
std::string render_role_tags(ChatFamily family, Messages messages, bool add_generation_prompt) {
    const std::string end = family == ChatFamily::phi3 ? "<|end|>\n" : "<|endoftext|>\n";
    std::string out;
    for (const ChatMessage &m : messages) out += "<|" + m.role + "|>\n" + m.content + end;
    if (add_generation_prompt) out += "<|assistant|>\n";
    return out;
}

// Gemma has no system role: system text goes at the top of the next user message.
std::string render_gemma(ChatFamily, Messages messages, bool add_generation_prompt) {
    std::string out;
    std::string system;
    for (const ChatMessage &m : messages) {
        if (m.role == "system") {
            system += trim(m.content);
            continue;
        }
        const std::string role = m.role == "assistant" ? "model" : m.role;
        out += "<start_of_turn>" + role + "\n";
        if (!system.empty() && role != "model") {
            out += system + "\n\n";
            system.clear();
        }
        out += std::string(trim(m.content)) + "<end_of_turn>\n";
    }
    if (add_generation_prompt) out += "<start_of_turn>model\n";
    return out;
}

struct FamilyInfo {
    ChatFamily family;
    std::string_view name;
    std::string (*render)(ChatFamily, Messages, bool);
};

// In ChatFamily's order: kFamilies[size_t(f)].family == f.
constexpr std::array kFamilies = {
    FamilyInfo{ChatFamily::chatml, "chatml", render_chatml},
    FamilyInfo{ChatFamily::llama2, "llama2", render_llama2},
    FamilyInfo{ChatFamily::llama2_sys, "llama2-sys", render_llama2},
    FamilyInfo{ChatFamily::llama2_sys_bos, "llama2-sys-bos", render_llama2},
    FamilyInfo{ChatFamily::llama2_sys_strip, "llama2-sys-strip", render_llama2},
    FamilyInfo{ChatFamily::llama3, "llama3", render_llama3},
    FamilyInfo{ChatFamily::mistral_v1, "mistral-v1", render_mistral},
    FamilyInfo{ChatFamily::mistral_v3, "mistral-v3", render_mistral},
    FamilyInfo{ChatFamily::mistral_v3_tekken, "mistral-v3-tekken", render_mistral},
    FamilyInfo{ChatFamily::mistral_v7, "mistral-v7", render_mistral_v7},
    FamilyInfo{ChatFamily::mistral_v7_tekken, "mistral-v7-tekken", render_mistral_v7},
    FamilyInfo{ChatFamily::phi3, "phi3", render_role_tags},
    FamilyInfo{ChatFamily::gemma, "gemma", render_gemma},
    FamilyInfo{ChatFamily::zephyr, "zephyr", render_role_tags},
};

const FamilyInfo &info(ChatFamily family) {
    const FamilyInfo &entry = kFamilies[size_t(family)];
    LOOM_ASSERT(entry.family == family);
    return entry;
}

}  // namespace

std::optional<ChatFamily> chat_family_from_name(std::string_view name) {
    for (const FamilyInfo &entry : kFamilies) {
        if (entry.name == name) return entry.family;
    }
    return std::nullopt;
}

std::string_view chat_family_name(ChatFamily family) {
    return info(family).name;
}

std::string chat_family_names() {
    std::string names;
    for (const FamilyInfo &entry : kFamilies) {
        if (!names.empty()) names += ", ";
        names += entry.name;
    }
    return names;
}

std::string render_chat(ChatFamily family, std::span<const ChatMessage> messages,
                        bool add_generation_prompt) {
    return info(family).render(family, messages, add_generation_prompt);
}

}  // namespace loom::engine
