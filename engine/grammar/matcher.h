#pragma once
// Which text a grammar (gbnf.h) allows next. The text read so far leaves a set of stacks, each a
// way of having read it: positions in the rules' sequences, the innermost on top. A stack whose
// top is a character waits for one of that set; an empty stack has read a whole sentence of the
// root. Reading a character keeps the stacks whose top takes it, moves them past it and expands
// each until it waits on a character again (a reference pushes every alternative of its rule; a
// finished sequence pops). Text comes as UTF-8 bytes, token by token: a character cut at the end
// of one token is completed by the next.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/gbnf.h"

namespace loom::engine::grammar {

// A vocabulary's pieces made ready for Matcher::mark_allowed: each as code points, grouped by the
// first, so that one check of a character class decides for every piece that starts with it.
struct PieceIndex {
    struct Piece {
        int32_t id;
        uint32_t begin, size;  // its whole characters: code_points[begin, begin + size)
        bool cut;              // it ends inside a character, one of [cut_lo, cut_hi]
        uint32_t cut_lo, cut_hi;
    };
    // pieces[id] for every id not `left_out` (and not malformed UTF-8, which no grammar reads).
    PieceIndex(const std::vector<std::string> &pieces, const std::vector<bool> &left_out);

    std::vector<Piece> pieces;
    std::vector<uint32_t> code_points;
    std::vector<std::pair<uint32_t, std::vector<uint32_t>>> by_first;  // sorted; indices of pieces
    std::vector<uint32_t> only_cut;  // pieces that are the start of one character
};

class Matcher {
  public:
    // Keeps a reference: `grammar` must outlive the matcher.
    explicit Matcher(const Grammar &grammar);

    // Whether `bytes` can come next: every character in it is read by some stack, and a character
    // cut at its end could still become one that some stack reads. Malformed UTF-8 is not allowed.
    bool allows(std::string_view bytes) const;
    // Reads `bytes`; throws loom::Error if allows(bytes) is false.
    void accept(std::string_view bytes);
    // Whether the text read so far is a whole sentence (and no character is cut).
    bool can_end() const;
    // Sets allowed[piece.id] for every piece of `index` that can come next, as allows() would
    // answer for each, in one walk: the pieces still alive after d characters are checked against
    // the stacks after those d characters, which are computed once for all of them. Needs no cut
    // character pending (cut_pending()); allowed is sized to the vocabulary.
    void mark_allowed(const PieceIndex &index, std::vector<uint8_t> &allowed) const;
    bool cut_pending() const { return !pending_.empty(); }
    // Where the matcher is, as bytes: two matchers of one grammar with the same state allow the
    // same continuations (what mark_allowed marks depends on nothing else).
    std::string state() const;

  private:
    struct Position {
        int32_t rule, alternative, index;
        auto operator<=>(const Position &) const = default;
    };
    using Stack = std::vector<Position>;

    // Reads pending_ + bytes from stacks_: false where some character is not allowed; else the
    // stacks and the cut character after them go to `stacks` and `pending` where given.
    bool read(std::string_view bytes, std::vector<Stack> *stacks, std::string *pending) const;
    void expand(Stack stack, std::vector<Stack> &out) const;
    void advance(const std::vector<Stack> &from, uint32_t c, std::vector<Stack> &to) const;
    const Symbol &top(const Stack &stack) const;

    const Grammar *grammar_;
    std::vector<Stack> stacks_;  // sorted and unique
    std::string pending_;        // the bytes of a character cut at the end of the text read
};

}  // namespace loom::engine::grammar
