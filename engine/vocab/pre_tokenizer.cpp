#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/vocab/pre_tokenizer.h"

#include <pcre2.h>

#include "engine/vocab/utf8.h"
#include "loom/error.h"

namespace loom::engine {

struct PreTokenizer::CompiledRegex {
    pcre2_code *code = nullptr;

    explicit CompiledRegex(const std::string &pattern) {
        int error = 0;
        PCRE2_SIZE error_offset = 0;
        // DOLLAR_ENDONLY: "$" is the end of the piece only, as in ECMAScript (llama.cpp's
        // std::regex), not also before a final newline.
        const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY;
        code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                             &error, &error_offset, nullptr);
        if (code == nullptr) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof(message));
            fail("vocab", "pre-tokenizer regex '{}' at {}: {}", pattern, error_offset,
                 reinterpret_cast<const char *>(message));
        }
        pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // interpreted matching if JIT is missing
    }
    ~CompiledRegex() { pcre2_code_free(code); }
    CompiledRegex(const CompiledRegex &) = delete;
    CompiledRegex &operator=(const CompiledRegex &) = delete;

    // Appends the matches in `piece` and the gaps between them to `out`. Each piece is its own
    // subject: lookaheads and "$" stop at its end.
    void split(std::string_view piece, pcre2_match_data *match,
               std::vector<std::string_view> &out) const {
        const auto subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
        size_t search_from = 0;
        size_t kept_until = 0;
        while (search_from <= piece.size()) {
            // The text was validated once up front; checking again per call would be quadratic.
            const int rc = pcre2_match(code, subject, piece.size(), search_from, PCRE2_NO_UTF_CHECK,
                                       match, nullptr);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) fail("vocab", "pre-tokenizer regex failed with PCRE2 error {}", rc);
            const PCRE2_SIZE *span = pcre2_get_ovector_pointer(match);
            const size_t start = span[0];
            const size_t end = span[1];
            if (end == start) {  // an empty match keeps nothing: look again one character on
                if (end == piece.size()) break;
                search_from = end + utf8::char_length_at(piece, end);
                continue;
            }
            if (start > kept_until) out.push_back(piece.substr(kept_until, start - kept_until));
            out.push_back(piece.substr(start, end - start));
            kept_until = end;
            search_from = end;
        }
        if (kept_until < piece.size()) out.push_back(piece.substr(kept_until));
    }
};

PreTokenizer::PreTokenizer(const PreTokenizerSpec &spec) {
    for (const std::string &pattern : spec.regexes) {
        regexes_.push_back(std::make_unique<CompiledRegex>(pattern));
    }
}

PreTokenizer::~PreTokenizer() = default;

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
    std::vector<std::string_view> pieces;
    if (!text.empty()) pieces.push_back(text);
    std::vector<std::string_view> next;
    for (const auto &regex : regexes_) {
        const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
            pcre2_match_data_create_from_pattern(regex->code, nullptr), &pcre2_match_data_free);
        next.clear();
        for (const std::string_view piece : pieces) regex->split(piece, match.get(), next);
        pieces.swap(next);
    }
    return pieces;
}

}  // namespace loom::engine
