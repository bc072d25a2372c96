// Transparent huge pages for the large host buffers: asked for at the first touch where they are
// cheap, merged in the background where they are not.
//
// Why two ways: on bare metal a huge page's fault is the cheapest way to get 2 MiB (one fault, one
// 2 MiB clear: ~10 GB/s), but on a VM whose balloon driver reports free memory to the host
// (virtio_balloon's free page reporting) the free blocks big enough for a huge page are exactly
// those handed back, and each must be backed by the host again at its first touch. On the Zen 4
// VM of docs/PERFORMANCE.md a start after 20 s idle faulted 0.55 GB of huge pages in 0.9 s of
// its 0.76-0.90 s, where 4 KiB pages (taken from fragments the host still backs) took 0.18 s.
// There the first token cannot wait for them; the generation after it still gains ~10 %.
#include "core/huge_pages.h"

#include "loom/backend.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1; older kernels refuse it (EINVAL) and the pages stay small
#endif

namespace loom {
namespace {

constexpr uintptr_t kHuge = uintptr_t(2) << 20;
constexpr uintptr_t kSmall = 4096;  // the pages mincore() reports

struct Span {
    uintptr_t begin = 0, end = 0;
    bool overlaps(const Span &o) const { return begin < o.end && o.begin < end; }
    void *start() const { return reinterpret_cast<void *>(begin); }
    size_t size() const { return end - begin; }
};

// The whole 2 MiB pages inside [p, p + size).
Span huge_part(void *p, size_t size) {
    const auto at = reinterpret_cast<uintptr_t>(p);
    const uintptr_t begin = (at + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t end = (at + size) & ~(kHuge - 1);
    return end > begin ? Span{begin, end} : Span{};
}

bool kernel_gives_huge_pages() {
    std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(file, modes);
    return !modes.empty() && modes.find("[never]") == std::string::npos;
}

// Whether a balloon device takes this VM's free memory back: virtio-balloon with free page
// reporting (feature bit 5, VIRTIO_BALLOON_F_REPORTING; `features` lists the bits as 0 / 1
// characters). The kernel reports free blocks of huge-page size or more, so a huge page is then
// nearly always one the host must back anew at its first touch, while 4 KiB pages come from the
// fragments it still backs. (Timing a few fresh huge pages instead misjudged 2 starts in 3 on the
// VM above: the first ones came from unreported fragments.)
bool host_takes_free_memory() {
    namespace fs = std::filesystem;
    std::error_code error;
    for (const fs::directory_entry &device :
         fs::directory_iterator("/sys/bus/virtio/drivers/virtio_balloon", error)) {
        std::ifstream file(device.path() / "features");
        std::string bits;
        if (std::getline(file, bits) && bits.size() > 5 && bits[5] == '1') return true;
    }
    return false;
}

constexpr HugePages kPolicies[] = {HugePages::off, HugePages::at_fault, HugePages::when_idle};

const char *name(HugePages policy) {
    switch (policy) {
        case HugePages::off:
            return "off";
        case HugePages::at_fault:
            return "at_fault";
        case HugePages::when_idle:
            return "when_idle";
    }
    return "?";
}

// LOOM_HUGE_PAGES where it names a policy (a bad value is reported once and ignored: it is a
// tuning aid, and a process should not fail for it), else the one the memory's origin says.
HugePages choose() {
    if (!kernel_gives_huge_pages()) return HugePages::off;
    const char *env = std::getenv("LOOM_HUGE_PAGES");
    const std::string_view wanted = env != nullptr ? env : "";
    for (HugePages policy : kPolicies) {
        if (wanted == name(policy)) return policy;
    }
    if (!wanted.empty()) {
        std::fprintf(stderr,
                     "loom: LOOM_HUGE_PAGES=%s is not a policy (off, at_fault, when_idle); "
                     "choosing one\n",
                     env);
    }
    return host_takes_free_memory() ? HugePages::when_idle : HugePages::at_fault;
}

// Merges small pages into huge ones, 2 MiB at a time, in a thread of the lowest priority, in the
// pauses between graph computations once a first has ended (between a server's requests, while a
// chat waits for its user). A merge holds a core in the kernel for milliseconds (on the VM above,
// ~4 ms: the host backs the new page as it is cleared), and the address space's lock with it:
// a token whose threads fall behind one waits for it. Merging whenever a core idled, even
// between a generation's tokens, took that generation from 57 to 47-60 tokens/s for the 5 s it
// lasted; during a load it made the loading threads wait, whose idle cores let it run again (a
// start of 0.32 s took 1.1-1.4 s). A piece is merged once all of its pages are resident:
// merging one not yet filled would fault in the rest (memory a cache may never use).
class Merger {
  public:
    void add(Span span) {
        std::lock_guard lock(mutex_);
        for (uintptr_t at = span.begin; at < span.end; at += kHuge)
            pending_.push_back({at, at + kHuge});
        retry_after_ = kFirstRetry;
        if (!started_) {
            started_ = true;
            std::thread([this] { run(); }).detach();
        }
        changed_.notify_all();
    }

    // The pieces go first, so that the wait is for the one piece in the merger's hands (it takes
    // the lock again at once, and would otherwise merge the buffer's next pieces meanwhile), and
    // again after it, since an unfilled piece goes back to its list.
    void remove(Span span) {
        std::unique_lock lock(mutex_);
        auto drop = [&] {
            for (std::deque<Span> *pieces : {&pending_, &unfilled_})
                std::erase_if(*pieces, [&](const Span &s) { return s.overlaps(span); });
        };
        drop();
        changed_.wait(lock, [&] { return !merging_.overlaps(span); });
        drop();
    }

    void compute_begins() {
        std::lock_guard lock(mutex_);
        ++computing_;
    }

    void compute_ends() {
        std::lock_guard lock(mutex_);
        --computing_;
        last_compute_end_ = Clock::now();  // no wake-up: the merger looks again by itself
    }

    // Merges every filled piece now, beside whatever runs, in the calling thread (the merger's
    // priority would leave it waiting for as long as another process keeps the cores busy).
    void settle() {
        std::unique_lock lock(mutex_);
        while (!pending_.empty() || merging_.size() != 0) {
            if (!merge_next(lock)) changed_.wait(lock);
        }
    }

  private:
    using Clock = std::chrono::steady_clock;
    // How long after a computation the merges may begin: longer than the gap between a generation's
    // tokens (sampling, under a millisecond), shorter than a pause a user notices.
    static constexpr auto kQuiet = std::chrono::milliseconds(100);
    // How long the pieces not yet filled wait before they are looked at again: from 0.1 s,
    // doubling to 6.4 s while none fills (each look is one mincore call a piece).
    static constexpr auto kFirstRetry = std::chrono::milliseconds(100);
    static constexpr auto kLastRetry = std::chrono::milliseconds(6400);

    // How long until the merges may run: zero when they may now.
    Clock::duration wait_for_quiet() const {
        if (computing_ > 0 || last_compute_end_ == Clock::time_point{}) return kQuiet;
        const Clock::duration since = Clock::now() - last_compute_end_;
        return since >= kQuiet ? Clock::duration{} : kQuiet - since;
    }

    [[noreturn]] void run() {
        sched_param param{};
        if (::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &param) != 0)
            ::setpriority(PRIO_PROCESS, ::gettid(), 19);  // where SCHED_IDLE is refused
        std::unique_lock lock(mutex_);
        for (;;) {
            if (pending_.empty()) {
                if (unfilled_.empty()) {
                    changed_.wait(lock, [&] { return !pending_.empty(); });
                } else {
                    const auto wait = retry_after_;
                    retry_after_ = std::min(2 * retry_after_, kLastRetry);
                    changed_.wait_for(lock, wait, [&] { return !pending_.empty(); });
                    pending_.insert(pending_.end(), unfilled_.begin(), unfilled_.end());
                    unfilled_.clear();
                }
                continue;
            }
            if (const Clock::duration wait = wait_for_quiet(); wait > Clock::duration{}) {
                changed_.wait_for(lock, wait);
                continue;
            }
            if (!merge_next(lock)) changed_.wait(lock);  // settle_huge_pages() holds the piece
        }
    }

    // Looks at the next pending piece, and merges it if it is filled, outside the lock; false
    // where there is none or another thread is merging one (one at a time: remove() waits for
    // `merging_` alone).
    bool merge_next(std::unique_lock<std::mutex> &lock) {
        if (pending_.empty() || merging_.size() != 0) return false;
        merging_ = pending_.front();
        pending_.pop_front();
        lock.unlock();
        const bool filled = resident(merging_);
        if (filled) merge(merging_);
        lock.lock();
        if (filled) {
            retry_after_ = kFirstRetry;
        } else {
            unfilled_.push_back(merging_);
        }
        merging_ = {};
        changed_.notify_all();
        return true;
    }

    static bool resident(Span piece) {
        unsigned char pages[kHuge / kSmall];
        if (::mincore(piece.start(), piece.size(), pages) != 0) return false;
        return std::all_of(std::begin(pages), std::end(pages),
                           [](unsigned char p) { return p & 1; });
    }

    // Where the kernel refuses to merge (no MADV_COLLAPSE before Linux 6.1, no huge page free),
    // the piece goes back to small pages, so that nothing faults a huge page on a token's path.
    static void merge(Span piece) {
        if (::madvise(piece.start(), piece.size(), MADV_HUGEPAGE) != 0) return;
        if (::madvise(piece.start(), piece.size(), MADV_COLLAPSE) != 0)
            ::madvise(piece.start(), piece.size(), MADV_NOHUGEPAGE);
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Span> pending_;   // 2 MiB pieces to look at
    std::deque<Span> unfilled_;  // looked at, not all resident yet
    Span merging_;               // the piece being looked at or merged, outside the lock
    std::chrono::milliseconds retry_after_ = kFirstRetry;
    int computing_ = 0;                   // graph computations in progress
    Clock::time_point last_compute_end_;  // none yet: no merges before the first token
    bool started_ = false;
};

// Never destroyed: its detached thread may still run while static destructors free buffers.
Merger &merger() {
    static auto *m = new Merger;
    return *m;
}

}  // namespace

HugePages huge_page_policy() {
    static const HugePages policy = choose();
    return policy;
}

const char *huge_pages_policy_name() {
    return name(huge_page_policy());
}

void ask_for_huge_pages(void *p, size_t size) {
    const Span span = huge_part(p, size);
    if (span.size() == 0) return;
    switch (huge_page_policy()) {
        case HugePages::off:
            return;
        case HugePages::at_fault:
            ::madvise(span.start(), span.size(), MADV_HUGEPAGE);
            return;
        case HugePages::when_idle:
            // Small pages at the first touch even where the kernel gives huge ones unasked.
            ::madvise(span.start(), span.size(), MADV_NOHUGEPAGE);
            merger().add(span);
            return;
    }
}

ComputeInProgress::ComputeInProgress() : merging_(huge_page_policy() == HugePages::when_idle) {
    if (merging_) merger().compute_begins();
}

ComputeInProgress::~ComputeInProgress() {
    if (merging_) merger().compute_ends();
}

void settle_huge_pages() {
    if (huge_page_policy() == HugePages::when_idle) merger().settle();
}

void forget_huge_pages(void *p, size_t size) {
    const Span span = huge_part(p, size);
    if (span.size() != 0 && huge_page_policy() == HugePages::when_idle) merger().remove(span);
}

}  // namespace loom
