#include "engine/model/deferred_moves.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "loom/cpu.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

// Rows are copied this many bytes at a time (whole groups of 16 rows), so that a model closed
// while they move waits at most one chunk (about 2 ms) for the thread to stop.
constexpr size_t kChunkBytes = size_t(4) << 20;
constexpr int64_t kGroupRows = 16;  // the repacked layouts' groups (core/cpu/repack.h)
// Copying starts this long after the load if no computation has started by then (a server
// waiting for its first request), or once the first computation has ended.
constexpr auto kQuietStart = std::chrono::milliseconds(100);
// Copies not yet in use may take this share of the moved bytes (at least kMinPending): the
// issue's "no more than the weights computed from + 5 %" while tokens are computed from the
// mapping. The copying then moves in about 20 steps, one between two computations each.
constexpr uint64_t kPendingShare = 20;
constexpr uint64_t kMinPending = uint64_t(64) << 20;

}  // namespace

DeferredMoves::DeferredMoves(BufferType &type, std::vector<Tensor *> tensors, Release release,
                             uint64_t pending_budget)
    : release_(std::move(release)) {
    std::vector<Tensor *> copies;
    moves_.reserve(tensors.size());
    for (Tensor *t : tensors) {
        if (t->data == nullptr || !t->is_contiguous() || t->nrows() % kGroupRows != 0) {
            fail("model", "deferred move of {}: not a whole contiguous group of rows", describe(t));
        }
        Move m{t, *t};
        m.copy.data = nullptr;
        m.copy.buffer = nullptr;
        moves_.push_back(m);
        // Until repointed, the products read the old bytes as the copy will hold them.
        if (&type == &cpu_repack_buffer_type()) t->flags |= kFlagRepackPending;
    }
    uint64_t total = 0;
    for (Move &m : moves_) {
        copies.push_back(&m.copy);
        total += m.tensor->nbytes();
    }
    pending_budget_ =
        pending_budget != 0 ? pending_budget : std::max(kMinPending, total / kPendingShare);
    buffer_ = place_tensors(type, copies);
    thread_ = std::thread([this] { copy_all(); });
}

DeferredMoves::~DeferredMoves() {
    {
        std::lock_guard lock(start_mutex_);
        stop_.store(true, std::memory_order_relaxed);
    }
    start_.notify_all();
    thread_.join();
}

void DeferredMoves::copy_all() {
    // The first computation runs alone: where it starts soon after the load (loom run) copying
    // beside it would delay the first token, by 0.15 s for a 1B F16 model on two cores.
    {
        std::unique_lock lock(start_mutex_);
        start_.wait_for(lock, kQuietStart, [&] { return stop_.load() || computing_.load(); });
    }
    { const std::unique_lock wait_for_it(mutex_); }
    uint64_t pending = 0;  // bytes copied and not yet in use
    for (size_t i = 0; i < moves_.size(); ++i) {
        const Move &m = moves_[i];
        if (m.tensor->nbytes() > pending_budget_) {
            // Beside the mapping a copy this big would pass the budget by itself (an F16
            // output.weight: 8 % of a 1B model's bytes). It is copied while nothing computes,
            // so that each chunk's mapped pages can go as soon as it is copied: the next token
            // waits for the copy (about 40 ms per 100 MB, 250 ms where fresh pages come slowly).
            const std::unique_lock lock(mutex_);
            install_finished();
            pending = 0;
            if (!copy_rows(m, /*release_copied=*/true)) return;
            n_copied_.store(i + 1, std::memory_order_release);
            n_copied_.notify_all();
            install_finished();
            continue;
        }
        // The copies not yet in use are resident beside the mapped bytes the computations read:
        // past a budget, wait for the computation in flight to end and put them in use.
        if (pending > 0 && pending + m.tensor->nbytes() > pending_budget_) {
            const std::unique_lock lock(mutex_);
            install_finished();
            pending = 0;
        }
        if (!copy_rows(m, /*release_copied=*/false)) return;
        pending += m.tensor->nbytes();
        n_copied_.store(i + 1, std::memory_order_release);
        n_copied_.notify_all();
        std::unique_lock lock(mutex_, std::try_to_lock);
        if (lock.owns_lock()) {
            install_finished();
            pending = 0;
        }
    }
    // The last ones wait for the computation in flight, if any.
    const std::unique_lock lock(mutex_);
    install_finished();
}

bool DeferredMoves::copy_rows(const Move &m, bool release_copied) {
    const int64_t rows = m.tensor->nrows();
    const size_t row_bytes = m.tensor->nb[1];
    const int64_t chunk_rows =
        std::max<int64_t>(kGroupRows, int64_t(kChunkBytes / row_bytes) / kGroupRows * kGroupRows);
    for (int64_t r = 0; r < rows; r += chunk_rows) {
        if (stop_.load(std::memory_order_relaxed)) return false;
        // The chunk as a 2-D tensor of its own: the layouts permute bytes within a group of
        // rows only, so whole groups convert independently.
        Tensor chunk = m.copy;
        chunk.ne[1] = std::min(chunk_rows, rows - r);
        chunk.ne[2] = chunk.ne[3] = 1;
        chunk.nb[2] = chunk.nb[3] = row_bytes * size_t(chunk.ne[1]);
        chunk.data = static_cast<std::byte *>(m.copy.data) + size_t(r) * row_bytes;
        const auto *source = static_cast<const std::byte *>(m.tensor->data) + size_t(r) * row_bytes;
        buffer_->set_tensor(&chunk, source, 0, chunk.nbytes());
        if (release_copied && release_) release_(source, chunk.nbytes());
    }
    return true;
}

void DeferredMoves::install_finished() {
    const size_t copied = n_copied_.load(std::memory_order_acquire);
    for (size_t i = n_installed_.load(std::memory_order_relaxed); i < copied; ++i) {
        Tensor *t = moves_[i].tensor;
        const void *old = t->data;
        t->data = moves_[i].copy.data;
        t->buffer = moves_[i].copy.buffer;
        t->flags &= ~uint32_t(kFlagRepackPending);
        // A tensor over the budget released its bytes chunk by chunk as they were copied.
        if (release_ && t->nbytes() <= pending_budget_) release_(old, t->nbytes());
    }
    n_installed_.store(copied, std::memory_order_release);
}

std::shared_lock<std::shared_mutex> DeferredMoves::hold() {
    if (!computing_.load(std::memory_order_relaxed)) {
        {
            std::lock_guard lock(start_mutex_);
            computing_.store(true, std::memory_order_relaxed);
        }
        start_.notify_all();
    }
    if (n_installed_.load(std::memory_order_acquire) < n_copied_.load(std::memory_order_acquire)) {
        std::unique_lock lock(mutex_, std::try_to_lock);
        if (lock.owns_lock()) install_finished();
    }
    return std::shared_lock(mutex_);
}

void DeferredMoves::finish() {
    for (size_t n; (n = n_copied_.load(std::memory_order_acquire)) < moves_.size();) {
        n_copied_.wait(n, std::memory_order_acquire);
    }
    std::unique_lock lock(mutex_);
    install_finished();
}

}  // namespace loom::engine
