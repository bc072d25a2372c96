#include "engine/vocab/bpe_tokenizer.h"

#include <fmt/format.h>

#include <queue>

#include "engine/vocab/symbols.h"
#include "engine/vocab/utf8.h"

namespace loom::engine {

BpeRanks::BpeRanks(const std::vector<std::string> &merges) {
    ranks_.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) ranks_.emplace(merges[i], int32_t(i));
}

int32_t BpeRanks::rank(std::string_view left, std::string_view right) const {
    thread_local std::string key;
    key.assign(left);
    key += ' ';
    key.append(right);
    const auto it = ranks_.find(std::string_view(key));
    return it == ranks_.end() ? -1 : it->second;
}

namespace {

struct Bigram {
    int32_t left;
    int32_t right;
    int32_t rank;
    size_t left_size;  // sizes when queued, to recognise a stale entry
    size_t right_size;
};

// Lowest rank first; among equal ranks the leftmost pair.
struct LowerPriority {
    bool operator()(const Bigram &a, const Bigram &b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

class BpeSession {
  public:
    BpeSession(const TokenTable &table, const BpeRanks &ranks, std::string_view word,
               bool hex_bytes)
        : table_(table), ranks_(ranks), word_(word), hex_bytes_(hex_bytes) {}

    void run(std::vector<int32_t> &out) {
        symbols_ = split_characters(word_);
        for (int32_t i = 1; i < int32_t(symbols_.size()); ++i) try_add_bigram(i - 1, i);
        merge_lowest_ranks();
        for (int32_t i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
            emit(symbols_[i], out);
        }
    }

  private:
    std::string_view text(const Symbol &s) const { return word_.substr(s.offset, s.size); }

    void try_add_bigram(int32_t left, int32_t right) {
        if (left == -1 || right == -1) return;
        const int32_t rank = ranks_.rank(text(symbols_[left]), text(symbols_[right]));
        if (rank < 0) return;
        queue_.push({left, right, rank, symbols_[left].size, symbols_[right].size});
    }

    void merge_lowest_ranks() {
        while (!queue_.empty()) {
            const Bigram bigram = queue_.top();
            queue_.pop();
            Symbol &left = symbols_[bigram.left];
            Symbol &right = symbols_[bigram.right];
            if (left.size != bigram.left_size || right.size != bigram.right_size ||
                right.size == 0 || left.next != bigram.right) {
                continue;  // one side changed since this pair was queued
            }
            left.size += right.size;
            right.size = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[right.next].prev = bigram.left;
            try_add_bigram(left.prev, bigram.left);
            try_add_bigram(bigram.left, left.next);
        }
    }

    // A merged symbol is always a token; a lone character without one falls back to the
    // tokens of its single bytes, where they exist.
    void emit(const Symbol &symbol, std::vector<int32_t> &out) const {
        const int32_t id = table_.find(text(symbol));
        if (id >= 0) {
            out.push_back(id);
            return;
        }
        for (const char byte : text(symbol)) {
            const int32_t byte_id = hex_bytes_
                                        ? table_.find(fmt::format("<0x{:02X}>", uint8_t(byte)))
                                        : table_.find(std::string_view(&byte, 1));
            if (byte_id >= 0) out.push_back(byte_id);
        }
    }

    const TokenTable &table_;
    const BpeRanks &ranks_;
    std::string_view word_;
    bool hex_bytes_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace

void bpe_tokenize_word(const TokenTable &table, const BpeRanks &ranks, std::string_view word,
                       const BpeWordOptions &options, std::vector<int32_t> &out) {
    if (options.whole_word) {
        const int32_t id = table.find(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }
    BpeSession(table, ranks, word, options.hex_bytes).run(out);
}

}  // namespace loom::engine
