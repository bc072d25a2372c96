// A grammar's matcher driven by tokens.
#include "engine/grammar/token_grammar.h"

#include <algorithm>

#include "engine/vocab/vocab.h"
#include "loom/error.h"

namespace loom::engine::grammar {
namespace {

std::vector<bool> left_out(const std::vector<std::string> &pieces, const std::vector<bool> &ends) {
    LOOM_ASSERT(pieces.size() == ends.size());
    std::vector<bool> out(pieces.size());
    for (size_t id = 0; id < pieces.size(); ++id) out[id] = ends[id] || pieces[id].empty();
    return out;
}

}  // namespace

VocabPieces::VocabPieces(std::vector<std::string> pieces, std::vector<bool> ends)
    : pieces_(std::move(pieces)),
      ends_(std::move(ends)),
      index_(pieces_, left_out(pieces_, ends_)) {}

std::shared_ptr<const VocabPieces> VocabPieces::of(const Vocab &vocab,
                                                   std::span<const int32_t> shown_special) {
    const auto n = size_t(vocab.n_tokens());
    std::vector<std::string> pieces(n);
    std::vector<bool> ends(n);
    for (size_t id = 0; id < n; ++id) {
        const bool shown =
            std::binary_search(shown_special.begin(), shown_special.end(), int32_t(id));
        pieces[id] = vocab.token_to_piece(int32_t(id), shown);
        ends[id] = vocab.is_eog(int32_t(id));
    }
    return std::make_shared<const VocabPieces>(std::move(pieces), std::move(ends));
}

TokenGrammar::TokenGrammar(Grammar grammar, std::shared_ptr<const VocabPieces> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), matcher_(grammar_) {
    LOOM_ASSERT(vocab_ != nullptr);
}

std::unique_ptr<TokenGrammar> TokenGrammar::for_vocab(Grammar grammar, const Vocab &vocab,
                                                      std::span<const int32_t> shown_special) {
    return std::make_unique<TokenGrammar>(std::move(grammar),
                                          VocabPieces::of(vocab, shown_special));
}

bool TokenGrammar::allows(int32_t token) const {
    const std::vector<std::string> &pieces = vocab_->pieces();
    if (token < 0 || size_t(token) >= pieces.size()) return false;
    if (vocab_->ends()[size_t(token)]) return matcher_.can_end();
    const std::string &piece = pieces[size_t(token)];
    return !piece.empty() && matcher_.allows(piece);
}

void TokenGrammar::mark_allowed(std::vector<uint8_t> &allowed) const {
    if (matcher_.cut_pending()) {  // a character cut by the last token: each piece completes it
        TokenConstraint::mark_allowed(allowed);
        return;
    }
    std::string state = matcher_.state();
    auto found = std::find_if(marked_.begin(), marked_.end(),
                              [&](const auto &entry) { return entry.first == state; });
    if (found == marked_.end()) {
        const std::vector<bool> &ends = vocab_->ends();
        std::vector<uint8_t> flags(ends.size(), 0);
        matcher_.mark_allowed(vocab_->index(), flags);
        const bool can_end = matcher_.can_end();
        for (size_t id = 0; id < flags.size(); ++id) {
            if (ends[id]) flags[id] = can_end ? 1 : 0;
        }
        if (marked_.size() == kMarkedStates) marked_.erase(marked_.begin());
        marked_.emplace_back(std::move(state), std::move(flags));
    } else {
        std::rotate(found, found + 1, marked_.end());
    }
    const std::vector<uint8_t> &flags = marked_.back().second;
    // Ids past the vocabulary (a model with more logits than tokens) are never allowed.
    std::fill(allowed.begin(), allowed.end(), 0);
    std::copy_n(flags.begin(), std::min(flags.size(), allowed.size()), allowed.begin());
}

void TokenGrammar::accept(int32_t token) {
    if (!allows(token)) fail("grammar", "token {} does not continue the grammar", token);
    if (!vocab_->ends()[size_t(token)]) matcher_.accept(vocab_->pieces()[size_t(token)]);
}

}  // namespace loom::engine::grammar
