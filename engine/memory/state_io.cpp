#include "engine/memory/state_io.h"

#include "loom/error.h"

namespace loom::engine {

void StateReader::bytes(void *p, size_t n) {
    if (n > in_.size() - offset_) {
        fail("state", "{} is truncated: {} bytes needed at byte {}, {} left", what_, n, offset_,
             in_.size() - offset_);
    }
    if (n == 0) return;  // p may be an empty vector's null data()
    std::memcpy(p, in_.data() + offset_, n);
    offset_ += n;
}

uint64_t StateReader::count(size_t each) {
    const auto n = get<uint64_t>();
    const size_t left = in_.size() - offset_;
    if (each > 0 && n > left / each) {
        fail("state", "{} is truncated or corrupt: {} entries of {} bytes at byte {}, {} left",
             what_, n, each, offset_, left);
    }
    return n;
}

}  // namespace loom::engine
