#pragma once
// A model's vocabulary, read from the tokenizer.ggml.* keys of a GGUF file, and its tokenizer,
// with llama.cpp's results token for token: SentencePiece ("llama"), byte-level BPE ("gpt2", and
// its variants "gemma4", "whitespace" and "hybriddna"), WordPiece ("bert") and Unigram ("t5").
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
class WpmTokenizer;
class UgmTokenizer;

enum class VocabType { spm, bpe, wpm, ugm };

class Vocab {
  public:
    // Throws loom::Error("[vocab] ...") naming the key on missing or malformed data, and for a
    // tokenizer model or pre-tokenizer Loom does not have (docs/TOKENIZERS.md).
    static Vocab from_gguf(const gguf::File &file);
    static Vocab from_metadata(const gguf::Metadata &metadata);

    VocabType type() const { return type_; }
    int32_t n_tokens() const { return table_.size(); }
    // -1 when the vocabulary has none. Absent keys take llama.cpp's defaults per model (e.g.
    // SentencePiece BOS 1, WordPiece BOS 101 "[CLS]" and separator 102 "[SEP]").
    int32_t bos() const { return bos_; }
    int32_t eos() const { return eos_; }
    int32_t eot() const { return eot_; }
    int32_t unk() const { return unk_; }
    int32_t sep() const { return sep_; }
    // tokenizer.ggml.add_bos_token / add_eos_token, else llama.cpp's defaults (BOS for
    // SentencePiece, WordPiece and some BPE pre-tokenizers, EOS for Unigram).
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    // tokenizer.ggml.add_sep_token, else WordPiece's default (on): a separator between the two
    // texts of a pair (format_rerank_pair).
    bool add_sep() const { return add_sep_; }
    // A space is put before the text (tokenizer.ggml.add_space_prefix; SentencePiece default on).
    bool add_space_prefix() const { return add_space_prefix_; }

    // End of generation: EOS, EOT, EOM and tokens such as "<|im_end|>". False out of range.
    bool is_eog(int32_t id) const;
    bool is_control(int32_t id) const;
    // The type in the file, and the attributes llama.cpp derives from it (TokenAttr bits).
    TokenType token_type(int32_t id) const;
    uint32_t token_attr(int32_t id) const;
    const std::string &token_text(int32_t id) const;

    // add_special: BOS / EOS as add_bos() / add_eos() say (WordPiece: [CLS] and [SEP] always).
    // parse_special: the text of control tokens (e.g. "<s>") becomes that token; user-defined
    // tokens are always matched. A special token with lstrip / rstrip eats the white space
    // before / after it.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special,
                                  bool parse_special) const;
    // The bytes a token stands for, as llama_token_to_piece: U+2581 -> " ", <0xNN> -> the byte,
    // byte-level BPE's map reversed. Control and unknown tokens are empty unless render_special.
    std::string token_to_piece(int32_t id, bool render_special) const;
    // As llama_detokenize (special tokens kept): the pieces concatenated, one leading space of
    // the first dropped where tokenize adds a space prefix, and for vocabularies that clean up
    // tokenization spaces (most BPE ones, WordPiece) no space before , . ? ! 's 'm 're 've.
    // Throws loom::Error on an id out of range.
    std::string detokenize(std::span<const int32_t> ids, bool render_special) const;

  private:
    struct Fragment {
        int32_t token;          // -1 for text
        std::string_view text;  // when token is -1
    };
    std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
    void tokenize_text(std::string_view text, bool after_special, std::vector<int32_t> &out) const;
    void tokenize_bpe(std::string_view text, std::vector<int32_t> &out) const;
    void tokenize_dna(std::string_view text, std::vector<int32_t> &out) const;
    void check_id(int32_t id) const;
    // Load steps (vocab_load.cpp, vocab_special.cpp).
    void read_model(const gguf::Metadata &metadata);
    void read_special_ids(const gguf::Metadata &metadata);
    void find_special_tokens(const gguf::Metadata &metadata);
    void set_model_attributes(const gguf::Metadata &metadata);
    void find_dna_tokens();

    VocabType type_ = VocabType::spm;
    std::string model_;  // tokenizer.ggml.model
    TokenTable table_;
    BpeRanks ranks_;
    std::shared_ptr<const PreTokenizer> pre_tokenizer_;  // BPE
    std::shared_ptr<const WpmTokenizer> wpm_;
    std::shared_ptr<const UgmTokenizer> ugm_;
    bool ignore_merges_ = false;
    bool whole_newline_runs_ = false;
    bool byte_encode_ = true;          // BPE words through GPT-2's byte map
    bool escape_whitespaces_ = false;  // BPE: spaces become U+2581 first (Gemma 4)
    bool lowercase_ = true;            // the "whitespace" model's normalizer
    bool kimi_k2_ = false;             // may come without merges
    bool force_bos_ = false;           // Gemma 4's pre-tokenizer: add_bos always
    bool clean_spaces_ = false;
    // hybriddna keeps its k-mer tokens apart from BPE tokens of the same letters with a U+E000
    // suffix: the lookup keeps it, the k-mers' text (the tokens after <oov>) loses it.
    static constexpr std::string_view kDnaMarker = "\xEE\x80\x80";
    // hybriddna: <dna>, </dna> and <oov>, all three or none (-1).
    int32_t dna_begin_ = -1;
    int32_t dna_end_ = -1;
    int32_t dna_unknown_ = -1;
    // Control, user-defined and unknown tokens, longest text first, for split_special.
    std::vector<int32_t> special_ids_;
    std::vector<int32_t> eog_ids_;  // sorted
    int32_t bos_ = -1;
    int32_t eos_ = -1;
    int32_t eot_ = -1;
    int32_t eom_ = -1;
    int32_t unk_ = -1;
    int32_t sep_ = -1;
    bool add_bos_ = false;
    bool add_eos_ = false;
    bool add_sep_ = false;
    bool add_space_prefix_ = false;
};

}  // namespace loom::engine
