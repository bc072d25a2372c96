#pragma once
// The pre-tokenizer of a BPE vocabulary (tokenizer.ggml.pre): a list of steps that cut the text
// into words before the merges run. Each step splits every piece left by the previous one into
// its matches and the gaps between them; no character is ever dropped.
//
// The regexes are llama.cpp's and run the way llama.cpp runs them, so that the words are the
// same: a regex with \p{..} classes matches a "collapsed" copy of the text, one byte per code
// point (ASCII as itself, White_Space as \v, others as a byte per category: \p{N} 0xD1,
// \p{L} 0xD2, \p{P} 0xD3, \p{M} 0xD4, \p{S} 0xD5, the rest 0xD0), with each \p{..} turned into
// its byte and ASCII members. That makes \p{Lu}, \p{Ll}, ... all \p{L}, as in llama.cpp. A regex
// with non-ASCII literals matches the code points themselves (UTF mode), White_Space again as
// \v. PCRE2 runs both without Unicode properties, so its \s, \d and \w are ASCII, as
// std::regex's are for llama.cpp.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom::engine {

struct PreTokenizerSpec {
    // In llama.cpp's syntax, plus \p{Han} (llama.cpp's is_han blocks) for Kimi K2. Two texts name
    // llama.cpp's hand-written digit grouping instead of a regex: kDigitGroups and
    // kDigitGroupsTinyAya.
    std::vector<std::string> regexes;
    bool ignore_merges = false;       // a word that is a whole token skips the merges (Llama 3)
    bool add_bos = false;             // llama.cpp's add_bos default for this pre-tokenizer
    bool clean_spaces = true;         // detokenize drops the space before , . ? ! and 's 'm 're 've
    bool byte_encode = true;          // GPT-2's byte map; else raw UTF-8 and "<0xNN>" byte tokens
    bool escape_whitespaces = false;  // spaces become U+2581 before splitting (Gemma 4)
    bool no_default_bos = false;      // no BOS unless the file names one (GLM 4)
    bool whole_newline_runs = false;  // a word of newlines that is a token skips the merges
    bool force_bos = false;           // add_bos whatever the file says (Gemma 4)
};

// llama.cpp's "\p{AFMoE_digits}": a run of digits is cut into a leading 1 or 2 and then groups
// of 3; the text before the run joins its first group. Tiny Aya's digit regex runs as the same
// code in llama.cpp.
inline constexpr std::string_view kDigitGroups = "\\p{AFMoE_digits}";
inline constexpr std::string_view kDigitGroupsTinyAya = "\\d{1,3}(?=(?:\\d{3})*\\b)";

// The spec llama.cpp uses for a tokenizer.ggml.pre name ("" is "default"); nullptr when the
// name is unknown.
const PreTokenizerSpec *find_pre_tokenizer(std::string_view name);
// Every name find_pre_tokenizer knows, comma separated, for error messages.
std::string pre_tokenizer_names();

class PreTokenizer {
  public:
    // The words of one text: the text re-encoded from its code points as llama.cpp decodes them
    // (utf8::decode), cut at `ends`.
    struct Words {
        std::string text;
        std::vector<size_t> ends;  // byte offset in `text` where each word ends, increasing

        size_t size() const { return ends.size(); }
        std::string_view operator[](size_t i) const {
            const size_t begin = i == 0 ? 0 : ends[i - 1];
            return std::string_view(text).substr(begin, ends[i] - begin);
        }
    };

    // Compiles the regexes with PCRE2 (JIT where available); throws loom::Error on a bad one.
    explicit PreTokenizer(const PreTokenizerSpec &spec);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer &) = delete;
    PreTokenizer &operator=(const PreTokenizer &) = delete;

    Words split(std::string_view text) const;

  private:
    struct Step;
    std::vector<std::unique_ptr<Step>> steps_;
    bool han_ = false;  // some regex uses \p{Han}: the collapsed text marks those code points
};

}  // namespace loom::engine
