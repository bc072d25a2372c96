// The CPU backend's entry points into its kernels, answered by the level core/isa.h selected.
#include "core/cpu/kernels.h"
#include "core/cpu/repack.h"
#include "loom/cpu.h"

namespace loom::cpu {

// Every level's entry point; the level of this object's own headers (LOOM_ISA) was declared
// inline there, and clang warns when it is reopened here without the keyword.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Winline-namespace-reopened-noninline"
#endif
#define LOOM_DECLARE_VARIANT(level) \
    namespace level {               \
    const Variant &variant();       \
    }
LOOM_ISA_LEVELS(LOOM_DECLARE_VARIANT)
#undef LOOM_DECLARE_VARIANT

namespace {

const Variant &selected() {
    static const Variant &v = []() -> const Variant & {
        switch (isa::selected()) {
#define LOOM_VARIANT_CASE(level) \
    case isa::Level::level:      \
        return level::variant();
            LOOM_ISA_LEVELS(LOOM_VARIANT_CASE)
#undef LOOM_VARIANT_CASE
        }
        __builtin_unreachable();
    }();
    return v;
}

}  // namespace

const KernelTable &kernel_table() {
    return selected().table;
}

bool has_repacked_layout(DType type) {
    return selected().has_repacked_layout(type);
}

bool bf16_sums_pairs() {
    return selected().bf16_pairs;
}

bool can_repack(const Tensor *t) {
    return selected().can_repack(t);
}

bool is_repacked(const Tensor *t) {
    return selected().is_repacked(t);
}

}  // namespace loom::cpu

namespace loom {

BufferType &cpu_repack_buffer_type() {
    return cpu::selected().repack_buffer_type();
}

bool cpu_repacks(const Tensor *t) {
    return cpu::can_repack(t);
}

std::string cpu_kernels_description() {
    return isa::describe();
}

}  // namespace loom
