#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/vocab/pre_tokenizer.h"

#include <pcre2.h>

#include <cstdint>
#include <utility>

#include "engine/vocab/unicode.h"
#include "engine/vocab/utf8.h"
#include "loom/error.h"

namespace loom::engine {

namespace {

// Collapsed bytes (see pre_tokenizer.h). 0xD0..0xD5 are llama.cpp's; 0xD6 and 0xD7 mark the
// letters and the other code points of the \p{Han} blocks, only when a regex asks for \p{Han}.
constexpr char kCollapsedWhitespace = 0x0B;

char collapsed_byte(uint32_t cpt, bool han) {
    if (cpt < 0x80) return char(cpt);
    if (unicode::is_whitespace(cpt)) return kCollapsedWhitespace;
    const uint8_t category = unicode::category(cpt);
    if (han && unicode::is_han(cpt)) return char(category == unicode::kLetter ? 0xD6 : 0xD7);
    switch (category) {
        case unicode::kNumber:
            return char(0xD1);
        case unicode::kLetter:
            return char(0xD2);
        case unicode::kPunctuation:
            return char(0xD3);
        case unicode::kMark:
            return char(0xD4);
        case unicode::kSymbol:
            return char(0xD5);
        default:
            return char(0xD0);
    }
}

// The members of a \p{..} class in the collapsed alphabet: its byte and its ASCII code points
// (llama.cpp's lists: ASCII punctuation !"#%&'()*,-./:;?@[\]_{} and symbols $+<=>^`|~).
std::string_view collapsed_members(std::string_view property) {
    static constexpr std::pair<std::string_view, std::string_view> kMembers[] = {
        {"N", "\\x{D1}0-9"},
        {"L", "\\x{D2}A-Za-z"},
        {"Lu", "\\x{D2}A-Za-z"},
        {"Ll", "\\x{D2}A-Za-z"},
        {"Lt", "\\x{D2}A-Za-z"},
        {"Lm", "\\x{D2}A-Za-z"},
        {"Lo", "\\x{D2}A-Za-z"},
        {"P",
         "\\x{D3}\\x21-\\x23\\x25-\\x2A\\x2C-\\x2F\\x3A\\x3B\\x3F\\x40\\x5B-\\x5D\\x5F\\x7B\\x7D"},
        {"M", "\\x{D4}"},
        {"S", "\\x{D5}\\x24\\x2B\\x3C-\\x3E\\x5E\\x60\\x7C\\x7E"},
        {"Han", "\\x{D6}\\x{D7}"},
    };
    for (const auto &[name, members] : kMembers) {
        if (name == property) return members;
    }
    fail("vocab", "pre-tokenizer property \\p{{{}}} is not supported", property);
}

// The regex for the collapsed text: each \p{..} becomes its members, bracketed outside a class.
std::string collapse_regex(std::string_view regex) {
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < regex.size(); ++i) {
        const char c = regex[i];
        if (c == '\\' && i + 1 < regex.size()) {
            if (regex.substr(i + 1, 2) == "p{") {
                const size_t close = regex.find('}', i);
                if (close == std::string_view::npos) fail("vocab", "unclosed \\p{{ in '{}'", regex);
                const std::string_view members =
                    collapsed_members(regex.substr(i + 3, close - i - 3));
                if (!in_class) out += '[';
                out += members;
                if (!in_class) out += ']';
                i = close;
                continue;
            }
            out += regex.substr(i, 2);
            ++i;
            continue;
        }
        if (c == '[') in_class = true;
        if (c == ']') in_class = false;
        out += c;
    }
    return out;
}

bool has_non_ascii(std::string_view text) {
    for (const char c : text) {
        if (uint8_t(c) >= 0x80) return true;
    }
    return false;
}

// PCRE2's JIT keeps a backtracking frame per repetition of a group (the letter groups of
// GPT-4o's and Tekken's regexes), so a long run of letters outgrows its default 32 KiB stack:
// each thread gets a stack that may grow to 64 MiB (reserved address space, used as needed), and
// a match that still runs out is done again by the interpreter, whose frames are on the heap.
// The limits on steps and heap are lifted: llama.cpp's regexes do not backtrack without bound.
constexpr size_t kJitStackMax = size_t(64) << 20;

class MatchContext {
  public:
    MatchContext()
        : context_(pcre2_match_context_create(nullptr)),
          stack_(pcre2_jit_stack_create(32 << 10, kJitStackMax, nullptr)) {
        if (context_ == nullptr) fail("vocab", "out of memory for a PCRE2 match context");
        if (stack_ != nullptr) pcre2_jit_stack_assign(context_, nullptr, stack_);
        pcre2_set_match_limit(context_, UINT32_MAX);
        pcre2_set_depth_limit(context_, UINT32_MAX);
        pcre2_set_heap_limit(context_, UINT32_MAX);
    }
    ~MatchContext() {
        pcre2_jit_stack_free(stack_);
        pcre2_match_context_free(context_);
    }
    MatchContext(const MatchContext &) = delete;
    MatchContext &operator=(const MatchContext &) = delete;

    static pcre2_match_context *of_this_thread() {
        thread_local MatchContext context;
        return context.context_;
    }

  private:
    pcre2_match_context *context_;
    pcre2_jit_stack *stack_;
};

struct Range {
    size_t begin;  // code point indices
    size_t end;
};

// One text while it is being split: its code points, the collapsed and UTF-8 forms the regexes
// read (built when a step first needs them), and where each code point starts in the UTF-8.
struct Subject {
    std::vector<uint32_t> cpts;
    std::string collapsed;
    std::string utf8;                  // White_Space as \v, surrogates as U+FFFD (valid UTF-8)
    std::vector<size_t> utf8_offsets;  // per code point, and one past the end
    std::vector<uint32_t> cpt_at_byte;

    const std::string &collapsed_text(bool han) {
        if (collapsed.empty() && !cpts.empty()) {
            collapsed.reserve(cpts.size());
            for (const uint32_t cpt : cpts) collapsed += collapsed_byte(cpt, han);
        }
        return collapsed;
    }

    const std::string &utf8_text() {
        if (utf8_offsets.empty()) {
            for (const uint32_t cpt : cpts) {
                utf8_offsets.push_back(utf8.size());
                const bool surrogate = cpt >= 0xD800 && cpt <= 0xDFFF;
                const bool space = cpt >= 0x80 && unicode::is_whitespace(cpt);
                utf8::append_codepoint(utf8, space ? 0x0B : surrogate ? 0xFFFD : cpt);
            }
            utf8_offsets.push_back(utf8.size());
            cpt_at_byte.assign(utf8.size() + 1, 0);
            for (size_t i = 0; i + 1 < utf8_offsets.size(); ++i) cpt_at_byte[utf8_offsets[i]] = i;
            cpt_at_byte[utf8.size()] = uint32_t(cpts.size());
        }
        return utf8;
    }
};

}  // namespace

struct PreTokenizer::Step {
    enum class Kind { collapsed, utf8, digit_groups };
    Kind kind = Kind::digit_groups;
    pcre2_code *code = nullptr;

    Step(const std::string &regex) {
        if (regex == kDigitGroups || regex == kDigitGroupsTinyAya) return;
        const bool literal_unicode = has_non_ascii(regex);
        kind = literal_unicode ? Kind::utf8 : Kind::collapsed;
        const std::string pattern = literal_unicode ? regex : collapse_regex(regex);
        // DOLLAR_ENDONLY: "$" is the end of the piece only, as in ECMAScript (std::regex), not
        // also before a final newline.
        const uint32_t options = PCRE2_DOLLAR_ENDONLY | (literal_unicode ? PCRE2_UTF : 0);
        int error = 0;
        PCRE2_SIZE error_offset = 0;
        code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                             &error, &error_offset, nullptr);
        if (code == nullptr) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof(message));
            fail("vocab", "pre-tokenizer regex '{}' at {}: {}", regex, error_offset,
                 reinterpret_cast<const char *>(message));
        }
        pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // interpreted matching if JIT is missing
    }
    ~Step() { pcre2_code_free(code); }
    Step(const Step &) = delete;
    Step &operator=(const Step &) = delete;

    // Cuts `subject` (one piece) at its matches, as std::regex_iterator walks it: after an empty
    // match the next one must be non-empty at the same place, else the search moves one
    // character on. An empty match still cuts. Appends byte ranges of `subject`.
    void match_piece(std::string_view subject, pcre2_match_data *match,
                     std::vector<std::pair<size_t, size_t>> &out) const {
        const auto data = reinterpret_cast<PCRE2_SPTR>(subject.data());
        const size_t n = subject.size();
        size_t position = 0, kept = 0;
        bool after_empty = false;
        while (position <= n) {
            // The text is valid UTF-8 by construction; checking per call would be quadratic.
            uint32_t options = PCRE2_NO_UTF_CHECK;
            if (after_empty) options |= PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
            pcre2_match_context *context = MatchContext::of_this_thread();
            int rc = pcre2_match(code, data, n, position, options, match, context);
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
                rc = pcre2_match(code, data, n, position, options | PCRE2_NO_JIT, match, context);
            }
            if (rc == PCRE2_ERROR_NOMATCH) {
                if (!after_empty || position == n) break;
                position += kind == Kind::utf8 ? utf8::char_length_at(subject, position) : 1;
                after_empty = false;
                continue;
            }
            if (rc < 0) fail("vocab", "pre-tokenizer regex failed with PCRE2 error {}", rc);
            const PCRE2_SIZE *span = pcre2_get_ovector_pointer(match);
            if (span[0] > kept) out.emplace_back(kept, span[0]);
            if (span[1] > span[0]) out.emplace_back(span[0], span[1]);
            kept = span[1];
            position = span[1];
            after_empty = span[1] == span[0];
        }
        if (kept < n) out.emplace_back(kept, n);
    }

    void split(Subject &subject, bool han, const std::vector<Range> &pieces,
               std::vector<Range> &out) const {
        if (kind == Kind::digit_groups) {
            for (const Range &piece : pieces) split_digit_groups(subject.cpts, piece, out);
            return;
        }
        const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
            pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
        std::vector<std::pair<size_t, size_t>> spans;
        for (const Range &piece : pieces) {
            spans.clear();
            if (kind == Kind::collapsed) {
                const std::string_view text = subject.collapsed_text(han);
                match_piece(text.substr(piece.begin, piece.end - piece.begin), match.get(), spans);
                for (const auto &[b, e] : spans) out.push_back({piece.begin + b, piece.begin + e});
                continue;
            }
            const std::string_view text = subject.utf8_text();
            const size_t base = subject.utf8_offsets[piece.begin];
            match_piece(text.substr(base, subject.utf8_offsets[piece.end] - base), match.get(),
                        spans);
            for (const auto &[b, e] : spans) {
                out.push_back({subject.cpt_at_byte[base + b], subject.cpt_at_byte[base + e]});
            }
        }
    }

    static void split_digit_groups(const std::vector<uint32_t> &cpts, const Range &piece,
                                   std::vector<Range> &out) {
        size_t kept = piece.begin;
        const auto cut = [&](size_t end) {
            if (end > kept) out.push_back({kept, end});
            kept = end;
        };
        for (size_t i = piece.begin; i < piece.end;) {
            if (unicode::category(cpts[i]) != unicode::kNumber) {
                ++i;
                continue;
            }
            const size_t start = i;
            while (i < piece.end && unicode::category(cpts[i]) == unicode::kNumber) ++i;
            // The first group takes the remainder, so the others are whole thousands; the text
            // before the run stays with the first group, as in llama.cpp.
            size_t group_end = start + (i - start) % 3;
            if (group_end > start) cut(group_end);
            for (; group_end < i; group_end += 3) cut(group_end + 3);
        }
        cut(piece.end);
    }
};

PreTokenizer::PreTokenizer(const PreTokenizerSpec &spec) {
    for (const std::string &regex : spec.regexes) {
        steps_.push_back(std::make_unique<Step>(regex));
        han_ = han_ || regex.find("\\p{Han}") != std::string::npos;
    }
}

PreTokenizer::~PreTokenizer() = default;

PreTokenizer::Words PreTokenizer::split(std::string_view text) const {
    Subject subject;
    subject.cpts = utf8::decode(text);
    std::vector<Range> pieces;
    if (!subject.cpts.empty()) pieces.push_back({0, subject.cpts.size()});
    std::vector<Range> next;
    for (const auto &step : steps_) {
        next.clear();
        step->split(subject, han_, pieces, next);
        pieces.swap(next);
    }

    Words words;
    std::vector<size_t> offsets;  // of each code point in words.text
    offsets.reserve(subject.cpts.size() + 1);
    words.text.reserve(text.size());
    for (const uint32_t cpt : subject.cpts) {
        offsets.push_back(words.text.size());
        utf8::append_codepoint(words.text, cpt);
    }
    offsets.push_back(words.text.size());
    words.ends.reserve(pieces.size());
    for (const Range &piece : pieces) words.ends.push_back(offsets[piece.end]);
    return words;
}

}  // namespace loom::engine
