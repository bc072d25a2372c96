#include "engine/memory/kv_cells.h"

#include <algorithm>

#include "loom/error.h"

namespace loom::engine {

KvCells::KvCells(int64_t size, int n_stream)
    : cells_(size_t(size)), head_(size_t(n_stream), 0), n_stream_(n_stream) {
    LOOM_ASSERT(n_stream > 0 && size % n_stream == 0);
}

std::pair<int32_t, int32_t> KvCells::stream_range(SeqId seq) const {
    const auto per = int32_t(per_stream());
    const int32_t stream = seq % n_stream_;
    return {stream * per, (stream + 1) * per};
}

int64_t KvCells::used() const {
    return std::count_if(cells_.begin(), cells_.end(), [](const KvCell &c) { return !c.empty(); });
}

int64_t KvCells::free_in_stream(int stream) const {
    const auto begin = cells_.begin() + stream * per_stream();
    return std::count_if(begin, begin + per_stream(), [](const KvCell &c) { return c.empty(); });
}

std::vector<int32_t> KvCells::find_slot(const Ubatch &u, const AttnWindow &window) const {
    // The next position of each sequence, from the cells as they are before u: a cell its window
    // has left is hidden from every token of u too.
    std::vector<Pos> next(kMaxSequences, 0);
    if (window.any()) {
        for (const KvCell &c : cells_) {
            for (size_t s = c.seqs._Find_first(); s < kMaxSequences; s = c.seqs._Find_next(s)) {
                next[s] = std::max(next[s], c.pos + 1);
            }
        }
    }
    // Free: empty, or hidden from the next position of every sequence the cell holds.
    const auto reusable = [&](const KvCell &c) {
        for (size_t s = c.seqs._Find_first(); s < kMaxSequences; s = c.seqs._Find_next(s)) {
            if (!window.hides(c.pos, next[s])) return false;
        }
        return true;
    };
    std::vector<int32_t> slot;
    slot.reserve(size_t(u.n_tokens()));
    if (window.any()) {
        // A ring: each stream's search starts after the cell it gave last and goes around once,
        // taking empty cells and those the window left, so the cells hold the latest positions
        // (what a sequence cut back needs to resume) and no cell is given twice.
        std::vector<int32_t> cursor = head_, visited(size_t(n_stream_), 0);
        const auto per = int32_t(per_stream());
        for (int64_t t = 0; t < u.n_tokens(); ++t) {
            const int stream = u.seq_id[size_t(t)] % n_stream_;
            int32_t &c = cursor[size_t(stream)];
            int32_t &n = visited[size_t(stream)];
            while (n < per && !reusable(cells_[size_t(stream * per + c)])) {
                c = (c + 1) % per;
                ++n;
            }
            if (n == per) return {};
            slot.push_back(stream * per + c);
            c = (c + 1) % per;
            ++n;
        }
        return slot;
    }
    // The first empty cells of each token's stream, in token order; a stream's search resumes
    // after the cell its previous token took, so no cell is given twice.
    std::vector<int32_t> resume(size_t(n_stream_), 0);
    for (int64_t t = 0; t < u.n_tokens(); ++t) {
        const SeqId seq = u.seq_id[size_t(t)];
        const auto [begin, end] = stream_range(seq);
        int32_t c = std::max(begin, resume[size_t(seq % n_stream_)]);
        while (c < end && !cells_[size_t(c)].empty()) ++c;
        if (c == end) return {};
        slot.push_back(c);
        resume[size_t(seq % n_stream_)] = c + 1;
    }
    return slot;
}

void KvCells::apply(const Ubatch &u, const std::vector<int32_t> &slot) {
    LOOM_ASSERT(int64_t(slot.size()) == u.n_tokens());
    const int64_t per = per_stream();
    for (int64_t t = 0; t < u.n_tokens(); ++t) {
        KvCell &cell = cells_[size_t(slot[size_t(t)])];
        cell = KvCell{.pos = u.pos[size_t(t)]};
        cell.seqs.set(size_t(u.seq_id[size_t(t)]));
        head_[size_t(slot[size_t(t)] / per)] = int32_t((slot[size_t(t)] % per + 1) % per);
    }
}

int64_t KvCells::n_kv(const Ubatch &u, int64_t pad) const {
    const int64_t per = per_stream();
    int64_t last = 0;  // past the last used cell, counted within its stream
    for (int s = u.stream0; s < u.stream0 + u.n_stream; ++s) {
        for (int64_t c = per; c > last; --c) {
            if (!cells_[size_t(s * per + c - 1)].empty()) {
                last = c;
                break;
            }
        }
    }
    return std::min(per, std::max<int64_t>(pad, (last + pad - 1) / pad * pad));
}

void KvCells::clear() {
    std::fill(cells_.begin(), cells_.end(), KvCell{});
    std::fill(head_.begin(), head_.end(), 0);
}

void KvCells::seq_rm(SeqId seq, Pos p0, Pos p1) {
    // A ring's search then starts at the first cell freed, if that comes before it (as llama.cpp
    // moves its head): a sequence cut back and continued fills the cells its removed positions
    // had, so it is laid out, and computes bit for bit, as when it was decoded the first time.
    const int64_t per = per_stream();
    for (int64_t i = 0; i < int64_t(cells_.size()); ++i) {
        KvCell &c = cells_[size_t(i)];
        if (c.empty() || !in_range(c, p0, p1)) continue;
        if (seq < 0) {
            c.seqs.reset();
        } else {
            c.seqs.reset(size_t(seq));
        }
        if (!c.empty()) continue;
        c = KvCell{};
        int32_t &head = head_[size_t(i / per)];
        head = std::min(head, int32_t(i % per));
    }
    restart_empty_rings();
}

void KvCells::restart_empty_rings() {
    for (int s = 0; s < n_stream_; ++s) {
        if (free_in_stream(s) == per_stream()) head_[size_t(s)] = 0;
    }
}

void KvCells::seq_share(SeqId src, SeqId dst, Pos p0, Pos p1) {
    for (KvCell &c : cells_) {
        if (c.seqs.test(size_t(src)) && in_range(c, p0, p1)) c.seqs.set(size_t(dst));
    }
}

std::vector<std::pair<int32_t, int32_t>> KvCells::plan_copy(SeqId src, SeqId dst, Pos p0, Pos p1,
                                                            bool &ok) const {
    const auto [begin, end] = stream_range(src);
    auto [to, to_end] = stream_range(dst);
    std::vector<std::pair<int32_t, int32_t>> moves;
    ok = true;
    for (int32_t from = begin; from < end; ++from) {
        const KvCell &c = cells_[size_t(from)];
        if (!c.seqs.test(size_t(src)) || !in_range(c, p0, p1)) continue;
        while (to < to_end && !cells_[size_t(to)].empty()) ++to;
        if (to == to_end) {
            ok = false;
            return {};
        }
        moves.emplace_back(from, to++);
    }
    return moves;
}

void KvCells::set_copy(int32_t from, int32_t to, SeqId dst) {
    KvCell &cell = cells_[size_t(to)];
    cell = KvCell{.pos = cells_[size_t(from)].pos, .delta = cells_[size_t(from)].delta};
    cell.seqs.set(size_t(dst));
}

void KvCells::seq_keep(SeqId seq) {
    for (KvCell &c : cells_) {
        if (c.seqs.test(size_t(seq))) {
            c.seqs.reset();
            c.seqs.set(size_t(seq));
        } else {
            c = KvCell{};
        }
    }
    restart_empty_rings();
}

bool KvCells::seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) {
    bool moved = false;
    for (KvCell &c : cells_) {
        if (!c.seqs.test(size_t(seq)) || !in_range(c, p0, p1)) continue;
        moved = true;
        c.pos += delta;
        c.delta += delta;
        if (c.pos < 0) c = KvCell{};  // shifted out of the context
    }
    return moved;
}

bool KvCells::seq_div(SeqId seq, Pos p0, Pos p1, int d) {
    bool moved = false;
    for (KvCell &c : cells_) {
        if (!c.seqs.test(size_t(seq)) || !in_range(c, p0, p1)) continue;
        moved = true;
        const Pos p = c.pos;
        c.pos /= d;
        c.delta += c.pos - p;
    }
    return moved;
}

Pos KvCells::seq_pos_max(SeqId seq) const {
    Pos m = -1;
    for (const KvCell &c : cells_) {
        if (c.seqs.test(size_t(seq))) m = std::max(m, c.pos);
    }
    return m;
}

Pos KvCells::seq_pos_min(SeqId seq) const {
    Pos m = -1;
    for (const KvCell &c : cells_) {
        if (c.seqs.test(size_t(seq)) && (m < 0 || c.pos < m)) m = c.pos;
    }
    return m;
}

std::vector<int32_t> KvCells::take_shift() {
    std::vector<int32_t> deltas(cells_.size());
    for (size_t i = 0; i < cells_.size(); ++i) {
        deltas[i] = cells_[i].delta;
        cells_[i].delta = 0;
    }
    return deltas;
}

}  // namespace loom::engine
