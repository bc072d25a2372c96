// Huge pages merged in the background (core/huge_pages.cpp): a buffer's bytes survive the merge,
// its pages become huge ones, and buffers freed while the merger works on them are let go.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/huge_pages.h"
#include "loom/backend.h"

namespace loom {
namespace {

constexpr size_t kHuge = size_t(2) << 20;
constexpr int kMadvCollapse = 25;  // MADV_COLLAPSE: in the kernel's headers, not yet in glibc's
// Buffers above glibc's largest mmap threshold (32 MiB), so that each is a mapping of its own and
// none reuses heap memory an earlier one left huge.
constexpr size_t kBuffer = 17 * kHuge;

// Bytes of [begin, end) that /proc/self/smaps counts in huge pages (AnonHugePages).
size_t huge_bytes_in(uintptr_t begin, uintptr_t end) {
    std::ifstream smaps("/proc/self/smaps");
    size_t total = 0;
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        uintptr_t from = 0, to = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> from >> dash >> to && dash == '-') {
            inside = from < end && begin < to;
            continue;
        }
        size_t kib = 0;
        if (inside && line.starts_with("AnonHugePages:") &&
            std::istringstream(line.substr(14)) >> kib)
            total += kib * 1024;
    }
    return total;
}

// Whether the kernel merges a touched 2 MiB piece on request (MADV_COLLAPSE, Linux 6.1).
bool kernel_collapses() {
    void *m =
        ::mmap(nullptr, 2 * kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return false;
    auto *piece = reinterpret_cast<std::byte *>((reinterpret_cast<uintptr_t>(m) + kHuge - 1) &
                                                ~uintptr_t(kHuge - 1));
    std::fill(piece, piece + kHuge, std::byte{7});
    const bool ok =
        ::madvise(piece, kHuge, MADV_HUGEPAGE) == 0 && ::madvise(piece, kHuge, kMadvCollapse) == 0;
    ::munmap(m, 2 * kHuge);
    return ok;
}

void fill(Buffer &b, uint8_t seed) {
    auto *p = static_cast<uint8_t *>(b.base());
    for (size_t i = 0; i < b.size(); ++i) p[i] = uint8_t(i * 31 + seed);
}

size_t mismatches(const Buffer &b, uint8_t seed) {
    const auto *p = static_cast<const uint8_t *>(b.base());
    size_t wrong = 0;
    for (size_t i = 0; i < b.size(); ++i) wrong += p[i] != uint8_t(i * 31 + seed);
    return wrong;
}

// Whether the merger has made the whole 2 MiB pages of `b` huge, waiting up to `patience`.
bool merged(const Buffer &b, std::chrono::milliseconds patience) {
    const auto begin = reinterpret_cast<uintptr_t>(b.base());
    const size_t whole = (b.size() / kHuge - 1) * kHuge;  // the 2 MiB pages wholly inside, at least
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (huge_bytes_in(begin, begin + b.size()) < whole &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return huge_bytes_in(begin, begin + b.size()) >= whole;
}

bool untouched_so_far(const Buffer &b) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // 4 times the merger's pause
    const auto begin = reinterpret_cast<uintptr_t>(b.base());
    return huge_bytes_in(begin, begin + b.size()) == 0;
}

TEST(HugePages, MergedInThePausesWithTheirBytes) {
    ::setenv("LOOM_HUGE_PAGES", "when_idle", 1);
    if (huge_page_policy() != HugePages::when_idle)
        GTEST_SKIP() << "no transparent huge pages here, or the policy was chosen earlier in this "
                        "process (ctest runs each test alone)";
    if (!kernel_collapses()) GTEST_SKIP() << "the kernel has no MADV_COLLAPSE (Linux < 6.1)";

    // Nothing merges before a first graph computation has ended.
    std::unique_ptr<Buffer> early = host_buffer_type().allocate(kBuffer);
    fill(*early, 9);
    EXPECT_TRUE(untouched_so_far(*early));
    early.reset();
    { const ComputeInProgress first; }

    // Buffers freed at once, some while their pieces wait or are being merged.
    for (int i = 0; i < 8; ++i) {
        std::unique_ptr<Buffer> gone = host_buffer_type().allocate(kBuffer + 4096);
        fill(*gone, uint8_t(i));
    }
    std::unique_ptr<Buffer> kept = host_buffer_type().allocate(kBuffer + 12345);
    fill(*kept, 3);
    EXPECT_TRUE(merged(*kept, std::chrono::seconds(30)));
    EXPECT_EQ(mismatches(*kept, 3), 0u);

    // Not beside a computation, unless settled.
    const ComputeInProgress busy;
    std::unique_ptr<Buffer> later = host_buffer_type().allocate(kBuffer);
    fill(*later, 5);
    EXPECT_TRUE(untouched_so_far(*later));
    settle_huge_pages();
    EXPECT_TRUE(merged(*later, std::chrono::milliseconds(0)));
    EXPECT_EQ(mismatches(*later, 5), 0u);
}

}  // namespace
}  // namespace loom
