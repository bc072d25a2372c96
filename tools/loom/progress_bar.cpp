#include "tools/loom/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace loom::tools {

namespace {
constexpr int kBarWidth = 30;
}

ProgressBar::ProgressBar(std::string what, std::string unit)
    : what_(std::move(what)), unit_(std::move(unit)), terminal_(isatty(STDERR_FILENO) == 1) {}

void ProgressBar::update(double fraction_done, int64_t done, int64_t total) {
    const int percent = std::clamp(int(100.0 * fraction_done), 0, 100);
    const bool last = done >= total;
    if (terminal_) {
        if (percent == shown_ && !last) return;
        shown_ = percent;
        const int filled = percent * kBarWidth / 100;
        std::fprintf(stderr, "\r%s [%s%s] %3d%% (%lld/%lld %s)", what_.c_str(),
                     std::string(size_t(filled), '#').c_str(),
                     std::string(size_t(kBarWidth - filled), '.').c_str(), percent,
                     static_cast<long long>(done), static_cast<long long>(total), unit_.c_str());
        if (last) std::fputc('\n', stderr);
        return;
    }
    const int tenth = percent / 10;
    if (tenth == shown_ && !last) return;
    if (last && shown_ == 10) return;
    shown_ = last ? 10 : tenth;
    std::fprintf(stderr, "%s: %d%% (%lld/%lld %s)\n", what_.c_str(), percent,
                 static_cast<long long>(done), static_cast<long long>(total), unit_.c_str());
}

}  // namespace loom::tools
