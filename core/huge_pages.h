// Transparent huge pages for the large host buffers: when a buffer gets them (core/huge_pages.cpp).
#pragma once

#include <cstddef>

namespace loom {

// Weights are streamed from memory once per token, and with 4 KiB pages that is a TLB miss every
// 4 KiB (~10 % of generation on the Zen 4 of docs/PERFORMANCE.md). How a buffer gets 2 MiB pages:
enum class HugePages {
    off,        // never: the kernel refuses them, or LOOM_HUGE_PAGES=off
    at_fault,   // asked for before the first touch, which then faults in 2 MiB at a time
    when_idle,  // 4 KiB pages at the first touch, merged into huge pages by a background thread
                // in the pauses between graph computations, once the first has ended
};

// The process's choice, made once: LOOM_HUGE_PAGES (off, at_fault, when_idle) where set, else
// when_idle on a VM whose free memory the host takes back (a fresh huge page then costs several
// times the 4 KiB pages it replaces, huge_pages.cpp), at_fault elsewhere.
HugePages huge_page_policy();

// Asks for huge pages over the 2 MiB-aligned part of [p, p + size) as the policy says, before the
// buffer's first touch. A refusal changes nothing but speed.
void ask_for_huge_pages(void *p, size_t size);

// Held by each graph computation (Scheduler::compute): under when_idle, merges run only in the
// pauses after the first one, never beside one (core/huge_pages.cpp says why). The first is a
// model's first decode, a token the user waits for.
class ComputeInProgress {
  public:
    ComputeInProgress();
    ~ComputeInProgress();
    ComputeInProgress(const ComputeInProgress &) = delete;
    ComputeInProgress &operator=(const ComputeInProgress &) = delete;

  private:
    bool merging_;  // the policy is when_idle
};

// Merges every piece whose pages are all resident now, before it returns: for a benchmark that
// measures the steady state a long-running process (a server, a chat) reaches after its first
// pause. Nothing to do under the other policies.
void settle_huge_pages();

// To be called before [p, p + size) is freed: it is no longer merged in the background, and a
// merge in progress inside it has finished when this returns.
void forget_huge_pages(void *p, size_t size);

}  // namespace loom
