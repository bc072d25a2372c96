// The dtype traits table: one row per entry of loom/dtype.def.
#include <algorithm>
#include <array>
#include <cctype>

#include "core/isa.h"
#include "core/quant/quant.h"
#include "loom/core.h"

namespace loom {
namespace {

constexpr std::array<const char *, kOpCount> kOpNames = {{
#define LOOM_OP(name, in_place) #name,
#include "loom/op.def"
#undef LOOM_OP
}};

constexpr std::array<bool, kOpCount> kOpInPlace = {{
#define LOOM_OP(name, in_place) in_place,
#include "loom/op.def"
#undef LOOM_OP
}};

}  // namespace

// Every level's entry point; the level of this object's own headers (LOOM_ISA) was declared
// inline there, and clang warns when it is reopened here without the keyword.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Winline-namespace-reopened-noninline"
#endif
#define LOOM_DECLARE_TABLE(level)      \
    namespace quant::level {           \
    const TraitsTable &traits_table(); \
    }
LOOM_ISA_LEVELS(LOOM_DECLARE_TABLE)
#undef LOOM_DECLARE_TABLE

const DTypeTraits &traits(DType type) {
    static const quant::TraitsTable &table = []() -> const quant::TraitsTable & {
        switch (isa::selected()) {
#define LOOM_TABLE_CASE(level) \
    case isa::Level::level:    \
        return quant::level::traits_table();
            LOOM_ISA_LEVELS(LOOM_TABLE_CASE)
#undef LOOM_TABLE_CASE
        }
        __builtin_unreachable();
    }();
    return table[size_t(type)];
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (size_t i = 0; i < kDTypeCount; ++i) {
        const std::string_view candidate = dtype_name(DType(i));
        const bool same =
            candidate.size() == name.size() &&
            std::equal(name.begin(), name.end(), candidate.begin(), [](char a, char b) {
                return std::tolower(uint8_t(a)) == std::tolower(uint8_t(b));
            });
        if (same) return DType(i);
    }
    return std::nullopt;
}

const char *dtype_name(DType type) {
    return traits(type).name;
}
const char *op_name(Op op) {
    return kOpNames[size_t(op)];
}
bool op_can_run_in_place(Op op) {
    return kOpInPlace[size_t(op)];
}

size_t row_size(DType type, int64_t ne0) {
    const DTypeTraits &t = traits(type);
    LOOM_ASSERT(ne0 % t.block_size == 0);
    return size_t(ne0 / t.block_size) * t.type_size;
}

}  // namespace loom
