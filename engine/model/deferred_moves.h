#pragma once
// Weight matrices moved into their repacked layout after the model has loaded, on a thread of
// their own, while the first tokens are computed from the file's mapping.
//
// Copying a model's matrices into fresh memory is most of its start (1.6 GB for a 1B F16 model:
// 0.25 s where the memory comes cheap, 1.4-2 s on a VM whose host backs each fresh page on first
// touch, against llama.cpp's 0.3 s that maps the file and allocates nothing; 0.5 s for Q8_0 there).
// Their products over the file's layout give the same bits as over the repacked one (F16 / BF16: a
// transpose in registers, tests/quant/grouped_float_matmul_tests.cpp; the block formats: each group
// permuted as it is read, kFlagRepackPending, core/cpu/qgemm.h) more slowly (F16 about 0.7x, the
// block formats 0.4-0.55x: docs/PERFORMANCE.md), so the first tokens need not wait: each tensor
// keeps pointing into the mapping until its copy is finished and nothing is computing, then points
// at the copy and its mapped pages are dropped.
//
// Who reads the tensors' data (a graph being built, allocated and computed) holds hold() for that
// long; a tensor is repointed only while nobody does. The copying begins once the first
// computation has ended (or 100 ms after the load if none has begun), and keeps the copies not
// yet in use within 5 % of the moved bytes, so that the file's pages and the copies are resident
// side by side only that much; a tensor bigger than that is copied while nothing computes, its
// old pages dropped chunk by chunk.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "loom/backend.h"
#include "loom/tensor.h"

namespace loom::engine {

class DeferredMoves {
  public:
    // Called with a tensor's old bytes once nothing can read them any more (a tensor bigger
    // than the budget: with each chunk of them as it is copied, while nothing computes).
    using Release = std::function<void(const void *data, size_t size)>;

    // Starts copying each of `tensors` (each with data, contiguous, rows a multiple of 16; in
    // the order given) into one buffer of `type`. `pending_budget`: the bytes of copies that may
    // wait beside the old bytes still in use; 0 for 5 % of the moved bytes (at least 64 MiB).
    DeferredMoves(BufferType &type, std::vector<Tensor *> tensors, Release release,
                  uint64_t pending_budget = 0);
    // Stops the copying at the next chunk and waits for it; tensors not yet repointed keep
    // pointing at their old bytes.
    ~DeferredMoves();
    DeferredMoves(const DeferredMoves &) = delete;
    DeferredMoves &operator=(const DeferredMoves &) = delete;

    // A shared hold on the tensors' data: while any is held nothing is repointed. Before taking
    // it, repoints the tensors whose copies are finished if nobody holds one right now.
    std::shared_lock<std::shared_mutex> hold();
    // Waits for every copy and repoints every tensor (waiting for the holds to end).
    void finish();
    // How many tensors point at their copies.
    size_t n_moved() const { return n_installed_.load(std::memory_order_acquire); }
    size_t size() const { return moves_.size(); }

  private:
    struct Move {
        Tensor *tensor;
        Tensor copy;  // the tensor's record in the new buffer
    };
    void copy_all();  // the thread
    // Copies m's rows chunk by chunk, releasing each chunk's old bytes if asked; false if
    // stopped on the way.
    bool copy_rows(const Move &m, bool release_copied);
    void install_finished();  // with mutex_ held exclusively
    std::vector<Move> moves_;
    std::unique_ptr<Buffer> buffer_;
    Release release_;
    std::atomic<size_t> n_copied_{0};     // moves_[0, n_copied_) are copied
    std::atomic<size_t> n_installed_{0};  // moves_[0, n_installed_) are repointed
    uint64_t pending_budget_ = 0;         // copied bytes not in use, at most (deferred_moves.cpp)
    std::atomic<bool> stop_{false};
    std::atomic<bool> computing_{false};  // a hold was taken
    std::mutex start_mutex_;              // with start_: the copying waits to begin
    std::condition_variable start_;
    std::shared_mutex mutex_;
    std::thread thread_;  // last: started once everything above exists
};

}  // namespace loom::engine
