#pragma once
// Sliding-window attention: which earlier positions a token may see besides causality
// (llama.cpp's llama_swa_type).
#include <cstdint>

namespace loom::engine {

enum class WindowType {
    none,      // every earlier position
    standard,  // the last n_swa positions: p0 is hidden from p1 when p1 - p0 >= n_swa
    chunked,   // positions of p1's own chunk of n_swa (Llama 4): p0 < p1 / n_swa * n_swa hidden
};

struct AttnWindow {
    WindowType type = WindowType::none;
    int64_t n_swa = 0;

    // Whether a key at position p0 is outside the window of a query at p1.
    bool hides(int32_t p0, int32_t p1) const {
        switch (type) {
            case WindowType::none:
                return false;
            case WindowType::standard:
                return int64_t(p1) - int64_t(p0) >= n_swa;
            case WindowType::chunked:
                return int64_t(p0) < int64_t(p1) / n_swa * n_swa;
        }
        return false;
    }
    bool any() const { return type != WindowType::none; }
};

}  // namespace loom::engine
