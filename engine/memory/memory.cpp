#include "engine/memory/memory.h"

namespace loom::engine {

void UbatchMemory::repeat(const std::vector<int32_t> &from) {
    for (KvSlot &slot : slots) {
        std::vector<int32_t> padded;
        padded.reserve(from.size());
        for (const int32_t i : from) padded.push_back(slot.cells[size_t(i)]);
        slot.cells = std::move(padded);
    }
}

}  // namespace loom::engine
