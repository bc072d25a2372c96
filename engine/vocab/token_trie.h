#pragma once
// A byte trie over token texts, for tokenizers that look up every token starting at a position
// (WordPiece's longest match, the Unigram lattice, the Unigram normalizer's user-defined tokens)
// in time proportional to the match, not to the number or length of the tokens.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::engine {

class TokenTrie {
  public:
    TokenTrie() = default;
    // (text, id) pairs; an empty text is skipped, and of equal texts the last one counts, as when
    // a map is filled in order.
    explicit TokenTrie(std::vector<std::pair<std::string_view, int32_t>> entries);

    // Calls visit(length, id) for every token that `text` starts with, shortest first.
    template <typename Visit>
    void for_each_prefix(std::string_view text, Visit &&visit) const {
        uint32_t node = 0;
        for (size_t i = 0; i < text.size() && !nodes_.empty(); ++i) {
            node = child(node, uint8_t(text[i]));
            if (node == kNone) return;
            if (nodes_[node].id >= 0) visit(i + 1, nodes_[node].id);
        }
    }

    // The longest token `text` starts with: (length, id), or (0, -1).
    std::pair<size_t, int32_t> longest_prefix(std::string_view text) const {
        std::pair<size_t, int32_t> best{0, -1};
        for_each_prefix(text, [&](size_t length, int32_t id) { best = {length, id}; });
        return best;
    }

  private:
    static constexpr uint32_t kNone = 0xFFFFFFFF;

    // The children of a node are consecutive nodes, sorted by byte.
    struct Node {
        uint32_t first_child = 0;
        uint16_t n_children = 0;  // up to 256
        uint8_t byte = 0;         // the edge from the parent
        int32_t id = -1;          // the token that ends here, -1 for none
    };

    uint32_t child(uint32_t node, uint8_t byte) const;

    std::vector<Node> nodes_;  // nodes_[0] is the root
};

}  // namespace loom::engine
