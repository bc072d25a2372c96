// The special tokens llama.cpp finds by their text when the file does not name them (end of
// turn, fill-in-the-middle, unused), the end-of-generation set, and the per-model attribute
// rules of llama_vocab::impl::load (Phi-3's rstrip, the <mask> lstrip of some encoders), and
// hybriddna's DNA tokens.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "engine/vocab/vocab.h"

namespace loom::engine {

namespace {

// Texts llama.cpp takes for each role when the file names no token for it.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>",         "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>",    "<EOT>",      "_<EOT>",  "[EOT]",         "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
};
constexpr std::string_view kEndOfMessageTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPrefixTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",    "<｜fim▁begin｜>",
    "<PRE>",          "▁<PRE>",       "<|code_prefix|>", "<|prefix|>",
};
constexpr std::string_view kFimSuffixTexts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",    "<｜fim▁hole｜>",
    "<SUF>",          "▁<SUF>",       "<|code_suffix|>", "<|suffix|>",
};
constexpr std::string_view kFimMiddleTexts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>",    "<｜fim▁end｜>",
    "<MID>",          "▁<MID>",       "<|code_middle|>", "<|middle|>",
};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                             "[PAD]"};
constexpr std::string_view kFimRepoTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                              "<REPO>", "<reponame>"};
constexpr std::string_view kFimSeparatorTexts[] = {"<|file_sep|>"};

// Tokens that end a generation whatever the file says.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
};

// gpt-oss's channel tokens are always rendered: llama.cpp makes them user-defined.
constexpr std::string_view kUserDefinedTexts[] = {"<|channel|>", "<|message|>", "<|start|>",
                                                  "<|constrain|>"};

bool contains_any(std::string_view text, std::initializer_list<std::string_view> parts) {
    return std::any_of(parts.begin(), parts.end(),
                       [&](std::string_view part) { return text.find(part) != text.npos; });
}

}  // namespace

void Vocab::find_special_tokens(const gguf::Metadata &metadata) {
    const int32_t n = n_tokens();
    // A fill-in-the-middle token the file names (the old key names second) is not looked for.
    const auto named = [&](std::initializer_list<std::string_view> keys) {
        for (const std::string_view key : keys) {
            const auto id = metadata.get_integer_optional<int64_t>(
                fmt::format("tokenizer.ggml.{}_token_id", key));
            if (id && *id >= 0 && *id < n) return int32_t(*id);
        }
        return int32_t(-1);
    };
    const auto mark_control = [&](int32_t id) { table_.attrs[id] |= kAttrControl; };
    // The first of `texts` in the vocabulary, made a control token; -1 when none is.
    const auto find_first = [&](std::span<const std::string_view> texts) {
        for (const std::string_view text : texts) {
            const int32_t id = table_.find(text);
            if (id >= 0) {
                mark_control(id);
                return id;
            }
        }
        return int32_t(-1);
    };
    if (eot_ < 0) eot_ = find_first(kEndOfTurnTexts);
    if (eom_ < 0) eom_ = find_first(kEndOfMessageTexts);
    if (named({"fim_pre", "prefix"}) < 0) find_first(kFimPrefixTexts);
    if (named({"fim_suf", "suffix"}) < 0) find_first(kFimSuffixTexts);
    if (named({"fim_mid", "middle"}) < 0) find_first(kFimMiddleTexts);
    // Padding, repository and file separator tokens of fill-in-the-middle end a generation.
    std::vector<int32_t> eog;
    const std::pair<std::string_view, std::span<const std::string_view>> kEogFim[] = {
        {"fim_pad", kFimPadTexts}, {"fim_rep", kFimRepoTexts}, {"fim_sep", kFimSeparatorTexts}};
    for (const auto &[key, texts] : kEogFim) {
        int32_t id = named({key});
        if (id < 0) id = find_first(texts);
        if (id >= 0) eog.push_back(id);
    }

    // Control tokens named "unused" are unused.
    for (int32_t id = 0; id < n; ++id) {
        const bool control = table_.attrs[id] & kAttrControl;
        if (control && table_.texts[id].find("unused") != std::string::npos) {
            table_.attrs[id] |= kAttrUnused;
        }
    }
    for (const std::string_view text : kEndOfGenerationTexts) {
        const int32_t id = table_.find(text);
        if (id < 0) continue;
        eog.push_back(id);
        mark_control(id);
    }
    for (const std::string_view text : kUserDefinedTexts) {
        const int32_t id = table_.find(text);
        if (id >= 0) table_.attrs[id] = kAttrUserDefined;
    }
    for (const int32_t id : {eos_, eot_, eom_}) {
        if (id >= 0) eog.push_back(id);
    }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

    const auto in_eog = [&](std::string_view text) {
        const int32_t id = table_.find(text);
        return id >= 0 && std::binary_search(eog.begin(), eog.end(), id) ? id : -1;
    };
    // gpt-oss (o200k_harmony) and Solar Open end on <|return|> / <|call|> (<|calls|>, <|flush|>),
    // and their <|end|> only closes a message.
    const int32_t end = in_eog("<|end|>");
    const bool call = in_eog("<|call|>") >= 0 || in_eog("<|calls|>") >= 0;
    if (end >= 0 && call && (in_eog("<|return|>") >= 0 || in_eog("<|flush|>") >= 0)) {
        std::erase(eog, end);
        table_.attrs[end] = kAttrUserDefined;
    }
    // Gemma 4's </s> is ordinary text.
    const int32_t closing_s = in_eog("</s>");
    if (in_eog("<|tool_response>") >= 0 && closing_s >= 0) {
        std::erase(eog, closing_s);
        table_.attrs[closing_s] = kAttrNormal;
    }
    eog_ids_ = std::move(eog);

    for (int32_t id = 0; id < n; ++id) {
        if (table_.attrs[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
            special_ids_.push_back(id);
        }
    }
    // Longest first, so that "<|im_start|>" is found before a shorter token inside it.
    std::stable_sort(special_ids_.begin(), special_ids_.end(), [&](int32_t a, int32_t b) {
        return table_.texts[a].size() > table_.texts[b].size();
    });
}

// llama.cpp's attributes by model, tokenizer or architecture name.
void Vocab::set_model_attributes(const gguf::Metadata &metadata) {
    const auto text_of = [&](std::string_view key) {
        return metadata.get_optional<std::string>(key).value_or("");
    };
    std::string name = text_of("general.name");
    std::transform(name.begin(), name.end(), name.begin(),
                   [](char c) { return char(std::tolower(uint8_t(c))); });
    const std::string pre = text_of("tokenizer.ggml.pre");
    const std::string architecture = text_of("general.architecture");
    const auto set = [&](std::string_view text, uint32_t attr, bool on) {
        const int32_t id = table_.find(text);
        if (id < 0) return;
        table_.attrs[id] = on ? table_.attrs[id] | attr : table_.attrs[id] & ~attr;
    };
    if (contains_any(pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
        contains_any(architecture, {"nomic-bert-moe", "jina-bert-v3"})) {
        set("<mask>", kAttrLstrip, true);
    } else if (contains_any(name, {"phi-3", "phi3"})) {
        for (const int32_t id : special_ids_) table_.attrs[id] |= kAttrRstrip;
        set("</s>", kAttrRstrip, true);
        for (const std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) {
            set(text, kAttrRstrip, false);
        }
    } else if (contains_any(name, {"modern-bert"})) {
        set("[MASK]", kAttrLstrip, true);
    }
}

void Vocab::find_dna_tokens() {
    const int32_t oov = table_.find("<oov>");
    if (oov >= 0) {
        for (int32_t id = oov + 1; id < n_tokens(); ++id) {
            std::string &text = table_.texts[id];
            if (text.size() > kDnaMarker.size() && text.ends_with(kDnaMarker)) {
                text.resize(text.size() - kDnaMarker.size());
            }
        }
    }
    dna_begin_ = table_.find("<dna>");
    dna_end_ = table_.find("</dna>");
    dna_unknown_ = oov;
    // Without all three, llama.cpp runs plain BPE.
    if (dna_begin_ < 0 || dna_end_ < 0 || dna_unknown_ < 0)
        dna_begin_ = dna_end_ = dna_unknown_ = -1;
}

}  // namespace loom::engine
