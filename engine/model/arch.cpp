#include "engine/model/arch.h"

#include <array>

namespace loom::engine {

#define LOOM_ARCH(name) extern const ArchDescriptor kArch_##name;
#include "engine/models/archs.def"
#undef LOOM_ARCH

namespace {

constexpr std::array kArchs = {
#define LOOM_ARCH(name) &kArch_##name,
#include "engine/models/archs.def"
#undef LOOM_ARCH
};

}  // namespace

const ArchDescriptor *find_arch(std::string_view name) {
    for (const ArchDescriptor *a : kArchs) {
        if (a->name == name) return a;
    }
    return nullptr;
}

std::string supported_archs() {
    std::string out;
    for (const ArchDescriptor *a : kArchs) {
        if (!out.empty()) out += ", ";
        out += a->name;
    }
    return out;
}

}  // namespace loom::engine
