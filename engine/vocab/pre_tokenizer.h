#pragma once
// The pre-tokenizer of a byte-level BPE vocabulary (tokenizer.ggml.pre): a list of regexes that
// cut the text into words before the merges run. Each regex in turn splits every piece left by
// the previous one into its matches and the gaps between them; no byte is ever dropped.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom::engine {

struct PreTokenizerSpec {
    std::vector<std::string> regexes;
    bool ignore_merges = false;  // a word that is a whole token skips the merges (Llama 3)
    bool add_bos = false;        // llama.cpp's add_bos default for this pre-tokenizer
};

// The spec llama.cpp uses for a tokenizer.ggml.pre name ("" is "default"); nullptr when the
// name is unknown.
const PreTokenizerSpec *find_pre_tokenizer(std::string_view name);

class PreTokenizer {
  public:
    // Compiles the regexes with PCRE2 (UTF, Unicode properties, JIT where available).
    explicit PreTokenizer(const PreTokenizerSpec &spec);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer &) = delete;
    PreTokenizer &operator=(const PreTokenizer &) = delete;

    // The words of `text`, which must be valid UTF-8 (utf8::replace_invalid), as views into it.
    std::vector<std::string_view> split(std::string_view text) const;

  private:
    struct CompiledRegex;
    std::vector<std::unique_ptr<CompiledRegex>> regexes_;
};

}  // namespace loom::engine
