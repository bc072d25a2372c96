// The grammar's stacks, read a character at a time.
#include "engine/grammar/matcher.h"

#include <algorithm>
#include <map>
#include <memory>

#include "engine/grammar/utf8_char.h"
#include "loom/error.h"

namespace loom::engine::grammar {
namespace {

// How many stacks one character may leave, and how many an expansion may visit: an ambiguous
// grammar ((a | a)(a | a)...) multiplies them, and past these it is refused rather than slow.
constexpr size_t kMaxStacks = 4096;
constexpr size_t kMaxExpansions = size_t(1) << 16;

template <typename T>
void sort_unique(std::vector<T> &v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

PieceIndex::PieceIndex(const std::vector<std::string> &texts, const std::vector<bool> &left_out) {
    std::map<uint32_t, std::vector<uint32_t>> first;
    for (size_t id = 0; id < texts.size(); ++id) {
        if (left_out[id]) continue;
        const std::string &text = texts[id];
        Piece piece{int32_t(id), uint32_t(code_points.size()), 0, false, 0, 0};
        bool malformed = false;
        for (size_t i = 0; i < text.size() && !malformed;) {
            uint32_t lo = 0, hi = 0;
            size_t length = 0;
            const Utf8 d = decode_char(text, i, lo, hi, length);
            if (d == Utf8::malformed) {
                malformed = true;
            } else if (d == Utf8::cut) {
                piece.cut = true;
                piece.cut_lo = lo;
                piece.cut_hi = hi;
            } else {
                code_points.push_back(lo);
                ++piece.size;
            }
            i += length;
        }
        if (malformed) {
            code_points.resize(piece.begin);
            continue;
        }
        const auto index = uint32_t(pieces.size());
        if (piece.size > 0) {
            first[code_points[piece.begin]].push_back(index);
        } else if (piece.cut) {
            only_cut.push_back(index);
        }
        pieces.push_back(piece);
    }
    by_first.assign(first.begin(), first.end());
}

Matcher::Matcher(const Grammar &grammar) : grammar_(&grammar) {
    const Rule &root = grammar.rules.at(size_t(grammar.root));
    for (size_t a = 0; a < root.alternatives.size(); ++a) {
        expand({{grammar.root, int32_t(a), 0}}, stacks_);
    }
    sort_unique(stacks_);
}

const Symbol &Matcher::top(const Stack &stack) const {
    const Position &p = stack.back();
    return grammar_->rules[size_t(p.rule)].alternatives[size_t(p.alternative)][size_t(p.index)];
}

// Until the stack waits on a character or is empty: a finished sequence pops (its caller goes
// on), a reference is replaced by its rule's alternatives. The caller's position moves past the
// reference first, and is dropped when nothing of its sequence is left, so that right recursion
// (star ::= item star | "") keeps stacks short.
void Matcher::expand(Stack stack, std::vector<Stack> &out) const {
    std::vector<Stack> work{std::move(stack)};
    size_t visited = 0;
    while (!work.empty()) {
        Stack s = std::move(work.back());
        work.pop_back();
        for (;;) {
            if (++visited > kMaxExpansions) {
                fail("grammar",
                     "the grammar is too ambiguous: over {} ways to go on from one "
                     "character",
                     kMaxExpansions);
            }
            if (s.empty()) {
                out.push_back(std::move(s));
                break;
            }
            Position &p = s.back();
            const Sequence &sequence =
                grammar_->rules[size_t(p.rule)].alternatives[size_t(p.alternative)];
            if (size_t(p.index) == sequence.size()) {
                s.pop_back();
                continue;
            }
            const Symbol &symbol = sequence[size_t(p.index)];
            if (symbol.rule < 0) {
                out.push_back(std::move(s));
                break;
            }
            if (size_t(++p.index) == sequence.size()) s.pop_back();
            const size_t n = grammar_->rules[size_t(symbol.rule)].alternatives.size();
            for (size_t a = 1; a < n; ++a) {
                Stack other = s;
                other.push_back({symbol.rule, int32_t(a), 0});
                work.push_back(std::move(other));
            }
            if (n == 0) break;  // a rule without alternatives matches nothing
            s.push_back({symbol.rule, 0, 0});
        }
    }
}

void Matcher::advance(const std::vector<Stack> &from, uint32_t c, std::vector<Stack> &to) const {
    to.clear();
    for (const Stack &s : from) {
        if (s.empty() || !top(s).chars.contains(c)) continue;
        Stack moved = s;
        ++moved.back().index;
        expand(std::move(moved), to);
    }
    sort_unique(to);
    if (to.size() > kMaxStacks) {
        fail("grammar", "the grammar is too ambiguous: over {} ways to read the text", kMaxStacks);
    }
}

bool Matcher::read(std::string_view bytes, std::vector<Stack> *stacks, std::string *pending) const {
    std::string joined;
    std::string_view text = bytes;
    if (!pending_.empty()) {
        joined = pending_ + std::string(bytes);
        text = joined;
    }
    const std::vector<Stack> *current = &stacks_;
    std::vector<Stack> buffers[2];
    int next = 0;
    size_t i = 0;
    while (i < text.size()) {
        uint32_t lo = 0, hi = 0;
        size_t length = 0;
        const Utf8 d = decode_char(text, i, lo, hi, length);
        if (d == Utf8::malformed) return false;
        if (d == Utf8::cut) {
            const bool possible = std::any_of(
                current->begin(), current->end(),
                [&](const Stack &s) { return !s.empty() && top(s).chars.intersects(lo, hi); });
            if (!possible) return false;
            break;
        }
        // The likeliest refusal costs no copy: no stack takes the character.
        const bool taken = std::any_of(current->begin(), current->end(), [&](const Stack &s) {
            return !s.empty() && top(s).chars.contains(lo);
        });
        if (!taken) return false;
        advance(*current, lo, buffers[next]);
        current = &buffers[next];
        next ^= 1;
        i += length;
    }
    if (stacks != nullptr) *stacks = *current;
    if (pending != nullptr) *pending = std::string(text.substr(i));
    return true;
}

void Matcher::mark_allowed(const PieceIndex &index, std::vector<uint8_t> &allowed) const {
    LOOM_ASSERT(pending_.empty());
    using Alive = std::shared_ptr<const std::vector<uint32_t>>;
    struct Work {
        Stack stack;
        Alive alive;  // pieces whose first `depth` characters this stack has read
        uint32_t depth;
    };
    std::vector<Work> work;
    // Each stack's successors after one character, shared by every piece that gives it one.
    auto push_next = [&](const Stack &stack, std::vector<uint32_t> &&next, uint32_t depth) {
        if (next.empty()) return;
        const Alive alive = std::make_shared<const std::vector<uint32_t>>(std::move(next));
        Stack moved = stack;
        ++moved.back().index;
        std::vector<Stack> successors;
        expand(std::move(moved), successors);
        sort_unique(successors);
        for (Stack &s : successors) work.push_back({std::move(s), alive, depth});
    };
    for (const Stack &stack : stacks_) {
        if (stack.empty()) continue;
        const CharSet &chars = top(stack).chars;
        for (const uint32_t i : index.only_cut) {
            const PieceIndex::Piece &p = index.pieces[i];
            if (chars.intersects(p.cut_lo, p.cut_hi)) allowed[size_t(p.id)] = 1;
        }
        std::vector<uint32_t> next;
        for (const auto &[c, pieces] : index.by_first) {
            if (chars.contains(c)) next.insert(next.end(), pieces.begin(), pieces.end());
        }
        push_next(stack, std::move(next), 1);
    }
    while (!work.empty()) {
        const Work w = std::move(work.back());
        work.pop_back();
        const CharSet *chars = w.stack.empty() ? nullptr : &top(w.stack).chars;
        std::vector<uint32_t> next;
        for (const uint32_t i : *w.alive) {
            const PieceIndex::Piece &p = index.pieces[i];
            if (allowed[size_t(p.id)] != 0) continue;
            if (p.size == w.depth) {  // every whole character read; a cut one must be possible
                if (!p.cut || (chars != nullptr && chars->intersects(p.cut_lo, p.cut_hi)))
                    allowed[size_t(p.id)] = 1;
            } else if (chars != nullptr && chars->contains(index.code_points[p.begin + w.depth])) {
                next.push_back(i);
            }
        }
        if (chars != nullptr) push_next(w.stack, std::move(next), w.depth + 1);
    }
}

bool Matcher::allows(std::string_view bytes) const {
    return read(bytes, nullptr, nullptr);
}

void Matcher::accept(std::string_view bytes) {
    std::vector<Stack> stacks;
    std::string pending;
    if (!read(bytes, &stacks, &pending)) {
        fail("grammar", "the text '{}' does not continue what the grammar allows", bytes);
    }
    stacks_ = std::move(stacks);
    pending_ = std::move(pending);
}

std::string Matcher::state() const {
    std::string out = pending_;
    out.push_back('\0');
    for (const Stack &stack : stacks_) {
        const auto size = uint32_t(stack.size());
        out.append(reinterpret_cast<const char *>(&size), sizeof size);
        out.append(reinterpret_cast<const char *>(stack.data()), stack.size() * sizeof(Position));
    }
    return out;
}

bool Matcher::can_end() const {
    return pending_.empty() &&
           std::any_of(stacks_.begin(), stacks_.end(), [](const Stack &s) { return s.empty(); });
}

}  // namespace loom::engine::grammar
