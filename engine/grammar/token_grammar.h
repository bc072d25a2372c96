#pragma once
// A grammar (gbnf.h) over a vocabulary's tokens: a token may come next when its bytes continue
// the text the grammar allows; a token that ends generation, when the text is a whole sentence.
// Tokens that stand for no bytes (control tokens) never may: they would add nothing the grammar
// could check, forever.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/matcher.h"
#include "engine/sampling/constraint.h"

namespace loom::engine {
class Vocab;
}

namespace loom::engine::grammar {

// A vocabulary's tokens as grammars read them: each one's bytes, whether it ends generation, and
// the index that marks them all at once. Built once per vocabulary (and shown control tokens)
// and shared by every grammar over it: on a 150k vocabulary it costs ~30 ms, the grammar itself
// little.
class VocabPieces {
  public:
    // pieces[id]: the bytes token id stands for; ends[id]: whether it ends generation.
    VocabPieces(std::vector<std::string> pieces, std::vector<bool> ends);
    // The pieces of `vocab` as generated text shows them, its end-of-generation tokens as ends;
    // the control tokens in `shown_special` (sorted) with their text, as the output shows them.
    static std::shared_ptr<const VocabPieces> of(const Vocab &vocab,
                                                 std::span<const int32_t> shown_special = {});

    const std::vector<std::string> &pieces() const { return pieces_; }
    const std::vector<bool> &ends() const { return ends_; }
    const PieceIndex &index() const { return index_; }

  private:
    std::vector<std::string> pieces_;
    std::vector<bool> ends_;
    PieceIndex index_;  // the pieces that are text (not ends, not empty)
};

class TokenGrammar final : public TokenConstraint {
  public:
    TokenGrammar(Grammar grammar, std::shared_ptr<const VocabPieces> vocab);
    // Over the pieces of `vocab` (VocabPieces::of): for one grammar; many share VocabPieces.
    static std::unique_ptr<TokenGrammar> for_vocab(Grammar grammar, const Vocab &vocab,
                                                   std::span<const int32_t> shown_special = {});
    TokenGrammar(const TokenGrammar &) = delete;  // the matcher points at grammar_
    TokenGrammar &operator=(const TokenGrammar &) = delete;

    bool allows(int32_t token) const override;
    void accept(int32_t token) override;
    void mark_allowed(std::vector<uint8_t> &allowed) const override;
    // Whether the text so far is a whole sentence of the grammar.
    bool complete() const { return matcher_.can_end(); }

  private:
    Grammar grammar_;
    std::shared_ptr<const VocabPieces> vocab_;
    Matcher matcher_;
    // What mark_allowed found in the last states it was asked about, latest last. Inside a JSON
    // string or number the matcher comes back to one state after every token, and marking the
    // whole vocabulary again would cost milliseconds per refused pick.
    static constexpr size_t kMarkedStates = 8;
    mutable std::vector<std::pair<std::string, std::vector<uint8_t>>> marked_;
};

}  // namespace loom::engine::grammar
