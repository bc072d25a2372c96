#include "engine/vocab/token_trie.h"

#include <algorithm>
#include <deque>

namespace loom::engine {

TokenTrie::TokenTrie(std::vector<std::pair<std::string_view, int32_t>> entries) {
    std::erase_if(entries, [](const auto &entry) { return entry.first.empty(); });
    // Stable, so that among equal texts the later entry stays last and is the one kept.
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<std::pair<std::string_view, int32_t>> unique;
    unique.reserve(entries.size());
    for (const auto &entry : entries) {
        if (!unique.empty() && unique.back().first == entry.first) {
            unique.back() = entry;
        } else {
            unique.push_back(entry);
        }
    }

    // Breadth first: a node stands for the sorted entries [begin, end) that share its first
    // `depth` bytes, and all its children are appended at once, so they are consecutive.
    struct Pending {
        uint32_t node;
        size_t begin, end, depth;
    };
    nodes_.push_back({});
    std::deque<Pending> queue = {{0, 0, unique.size(), 0}};
    while (!queue.empty()) {
        Pending p = queue.front();
        queue.pop_front();
        if (p.begin < p.end && unique[p.begin].first.size() == p.depth) {
            nodes_[p.node].id = unique[p.begin].second;
            ++p.begin;
        }
        nodes_[p.node].first_child = uint32_t(nodes_.size());
        for (size_t i = p.begin; i < p.end;) {
            const uint8_t byte = uint8_t(unique[i].first[p.depth]);
            size_t j = i + 1;
            while (j < p.end && uint8_t(unique[j].first[p.depth]) == byte) ++j;
            queue.push_back({uint32_t(nodes_.size()), i, j, p.depth + 1});
            nodes_.push_back({.byte = byte});
            ++nodes_[p.node].n_children;
            i = j;
        }
    }
}

uint32_t TokenTrie::child(uint32_t node, uint8_t byte) const {
    const Node &parent = nodes_[node];
    const auto begin = nodes_.begin() + parent.first_child;
    const auto end = begin + parent.n_children;
    const auto it =
        std::lower_bound(begin, end, byte, [](const Node &n, uint8_t b) { return n.byte < b; });
    return it != end && it->byte == byte ? uint32_t(it - nodes_.begin()) : kNone;
}

}  // namespace loom::engine
