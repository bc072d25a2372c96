#include "engine/vocab/spm_tokenizer.h"

#include <queue>

#include "engine/vocab/symbols.h"
#include "engine/vocab/utf8.h"

namespace loom::engine {

namespace {

// A run of text in a doubly linked list; merged-away symbols keep size 0.
struct Bigram {
    int32_t left;  // symbol index; the right one is symbols[left].next when pushed
    int32_t right;
    float score;
    size_t size;  // bytes of the merged text, to recognise a stale entry
};

// Best score first; among equal scores the leftmost pair, as SentencePiece does.
struct LowerPriority {
    bool operator()(const Bigram &a, const Bigram &b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

class SpmSession {
  public:
    SpmSession(const TokenTable &table, std::string_view text) : table_(table), text_(text) {}

    void run(int32_t unknown_id, std::vector<int32_t> &out) {
        symbols_ = split_characters(text_);
        for (int32_t i = 1; i < int32_t(symbols_.size()); ++i) try_add_bigram(i - 1, i);
        merge_best_pairs();
        for (int32_t i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
            emit(symbols_[i], unknown_id, out);
        }
    }

  private:
    void try_add_bigram(int32_t left, int32_t right) {
        if (left == -1 || right == -1) return;
        const size_t size = symbols_[left].size + symbols_[right].size;
        const int32_t id = table_.find(text_.substr(symbols_[left].offset, size));
        if (id < 0) return;
        queue_.push({left, right, table_.scores[id], size});
    }

    void merge_best_pairs() {
        while (!queue_.empty()) {
            const Bigram bigram = queue_.top();
            queue_.pop();
            Symbol &left = symbols_[bigram.left];
            Symbol &right = symbols_[bigram.right];
            if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) {
                continue;  // one side was merged since this pair was queued
            }
            left.size += right.size;
            right.size = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[right.next].prev = bigram.left;
            try_add_bigram(left.prev, bigram.left);
            try_add_bigram(bigram.left, left.next);
        }
    }

    void emit(const Symbol &symbol, int32_t unknown_id, std::vector<int32_t> &out) const {
        const std::string_view text = text_.substr(symbol.offset, symbol.size);
        const int32_t id = table_.find(text);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
        for (const char byte : text) {
            const int32_t byte_id = table_.byte_ids[uint8_t(byte)];
            const int32_t fallback = byte_id >= 0 ? byte_id : unknown_id;
            if (fallback >= 0) out.push_back(fallback);
        }
    }

    const TokenTable &table_;
    std::string_view text_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace

void spm_tokenize(const TokenTable &table, std::string_view text, int32_t unknown_id,
                  std::vector<int32_t> &out) {
    SpmSession(table, text).run(unknown_id, out);
}

}  // namespace loom::engine
