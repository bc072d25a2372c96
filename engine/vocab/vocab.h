#pragma once
// A model's vocabulary, read from the tokenizer.ggml.* keys of a GGUF file, and its tokenizer:
// SentencePiece ("llama") or byte-level BPE ("gpt2"), with llama.cpp's results token for token.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/vocab/bpe_tokenizer.h"
#include "engine/vocab/token_table.h"
#include "loom/gguf.h"

namespace loom::engine {

class PreTokenizer;

enum class VocabType { spm, bpe };

class Vocab {
  public:
    // Throws loom::Error("[vocab] ...") naming the key on missing or malformed data.
    static Vocab from_gguf(const gguf::File &file);
    static Vocab from_metadata(const gguf::Metadata &metadata);

    VocabType type() const { return type_; }
    int32_t n_tokens() const { return table_.size(); }
    // -1 when the vocabulary has none.
    int32_t bos() const { return bos_; }
    int32_t eos() const { return eos_; }
    int32_t eot() const { return eot_; }
    int32_t unk() const { return unk_; }
    // tokenizer.ggml.add_bos_token / add_eos_token; when absent, llama.cpp's defaults (BOS for
    // SentencePiece and Llama 3 BPE, never EOS).
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    // SentencePiece only: a space is put before the text (tokenizer.ggml.add_space_prefix, default
    // on).
    bool add_space_prefix() const { return add_space_prefix_; }

    // End of generation: EOS, EOT, EOM and tokens such as "<|im_end|>". False out of range.
    bool is_eog(int32_t id) const;
    bool is_control(int32_t id) const;
    TokenType token_type(int32_t id) const;
    const std::string &token_text(int32_t id) const;

    // add_special: BOS (and EOS) per add_bos()/add_eos(). parse_special: the text of control
    // tokens (e.g. "<s>") becomes that token; user-defined tokens are always matched.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special,
                                  bool parse_special) const;
    // The bytes a token stands for. SentencePiece: U+2581 -> " ", <0xNN> -> the byte; BPE: the
    // byte-to-unicode map reversed. Control and unknown tokens are empty unless render_special.
    std::string token_to_piece(int32_t id, bool render_special) const;
    // The pieces concatenated; as llama.cpp, one leading space of the first piece is dropped
    // where tokenize adds a space prefix. Throws loom::Error on an id out of range.
    std::string detokenize(std::span<const int32_t> ids, bool render_special) const;

  private:
    struct Fragment {
        int32_t token;          // -1 for text
        std::string_view text;  // when token is -1
    };
    std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
    void tokenize_text(std::string_view text, bool after_special, std::vector<int32_t> &out) const;
    void check_id(int32_t id) const;

    VocabType type_ = VocabType::spm;
    TokenTable table_;
    BpeRanks ranks_;
    std::shared_ptr<const PreTokenizer> pre_tokenizer_;  // BPE only
    bool ignore_merges_ = false;
    // Control, user-defined and unknown tokens, longest text first, for split_special.
    std::vector<int32_t> special_ids_;
    std::vector<int32_t> eog_ids_;  // sorted
    int32_t bos_ = -1;
    int32_t eos_ = -1;
    int32_t eot_ = -1;
    int32_t eom_ = -1;
    int32_t unk_ = -1;
    bool add_bos_ = false;
    bool add_eos_ = false;
    bool add_space_prefix_ = false;
};

}  // namespace loom::engine
