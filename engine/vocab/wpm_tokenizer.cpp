#include "engine/vocab/wpm_tokenizer.h"

#include <string>

#include "engine/vocab/unicode.h"
#include "engine/vocab/utf8.h"

namespace loom::engine {

namespace {

// BERT's CJK ranges; the one from U+2B920 stands where Hugging Face's code has it (the block
// itself starts at U+2B820).
bool is_chinese(uint32_t cpt) {
    return (cpt >= 0x4E00 && cpt <= 0x9FFF) || (cpt >= 0x3400 && cpt <= 0x4DBF) ||
           (cpt >= 0x20000 && cpt <= 0x2A6DF) || (cpt >= 0x2A700 && cpt <= 0x2B73F) ||
           (cpt >= 0x2B740 && cpt <= 0x2B81F) || (cpt >= 0x2B920 && cpt <= 0x2CEAF) ||
           (cpt >= 0xF900 && cpt <= 0xFAFF) || (cpt >= 0x2F800 && cpt <= 0x2FA1F);
}

std::vector<std::string> split_words(std::string_view text, const WpmOptions &options) {
    std::vector<std::string> words(1);
    for (uint32_t cpt : utf8::decode(text)) {
        if (options.strip_accents) cpt = unicode::decomposition_base(cpt);
        if (unicode::is_whitespace(cpt)) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        const uint8_t category = unicode::category(cpt);
        if (cpt == 0 || cpt == 0xFFFD || category == unicode::kControl) continue;
        if (options.strip_accents && category == unicode::kMark) continue;
        const bool alone = category == unicode::kPunctuation ||
                           (cpt < 0x7F && category == unicode::kSymbol) || is_chinese(cpt);
        if (alone && !words.back().empty()) words.emplace_back();
        utf8::append_codepoint(words.back(), options.lowercase ? unicode::to_lower(cpt) : cpt);
        if (alone) words.emplace_back();
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

}  // namespace

WpmTokenizer::WpmTokenizer(const TokenTable &table, const WpmOptions &options) : options_(options) {
    std::vector<std::pair<std::string_view, int32_t>> entries;
    entries.reserve(table.texts.size());
    for (int32_t id = 0; id < table.size(); ++id) entries.emplace_back(table.texts[id], id);
    trie_ = TokenTrie(std::move(entries));
}

void WpmTokenizer::tokenize(std::string_view text, int32_t unknown_id,
                            std::vector<int32_t> &out) const {
    for (const std::string &word : split_words(text, options_)) {
        const std::string marked = "\xE2\x96\x81" + word;
        const size_t start = out.size();
        for (size_t i = 0; i < marked.size();) {
            const auto [length, id] = trie_.longest_prefix(std::string_view(marked).substr(i));
            if (length == 0) {  // a piece no token spells: the whole word is unknown
                out.resize(start);
                break;
            }
            out.push_back(id);
            i += length;
        }
        if (out.size() == start && unknown_id >= 0) out.push_back(unknown_id);
    }
}

}  // namespace loom::engine
