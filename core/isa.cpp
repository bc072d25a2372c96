// Which instruction-set level's kernels run (core/isa.h).
#include "core/isa.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace loom::isa {
namespace {

#if defined(LOOM_PORTABLE)
// Whether this CPU (and its OS, which must save the wider registers: libgcc checks XCR0) runs
// a level: the feature sets of core/isa.h's LOOM_ISA_FEATURES_* and isa_variant.h's targets.
bool runs(Level level) {
    __builtin_cpu_init();
    const bool v3 = __builtin_cpu_supports("x86-64-v3");  // AVX2, FMA, F16C, BMI1/2, MOVBE
    const bool v4 = __builtin_cpu_supports("x86-64-v4");  // + AVX-512 F/CD/BW/DQ/VL
    switch (level) {
        case Level::baseline:
            return true;
        case Level::avx2:
            return v3;
        case Level::avx_vnni:
            return v3 && __builtin_cpu_supports("avxvnni");
        case Level::avx512:
            return v4;
        case Level::avx512_vnni:
            return v4 && __builtin_cpu_supports("avx512vnni");
        case Level::avx512_bf16:
            return v4 && __builtin_cpu_supports("avx512vnni") &&
                   __builtin_cpu_supports("avx512bf16");
    }
    return false;
}

// The best level this CPU runs. AVX-512 outranks AVX-VNNI: twice the lanes per instruction.
Level best() {
    for (Level level :
         {Level::avx512_bf16, Level::avx512_vnni, Level::avx512, Level::avx_vnni, Level::avx2})
        if (runs(level)) return level;
    return Level::baseline;
}

std::optional<Level> from_name(std::string_view name) {
#define LOOM_ISA_NAME(level) \
    if (name == #level) return Level::level;
    LOOM_ISA_LEVELS(LOOM_ISA_NAME)
#undef LOOM_ISA_NAME
    return std::nullopt;
}

// LOOM_ISA's level where it names one this CPU runs, else the best; a bad value is reported
// once on stderr and ignored (it is a testing aid, and a process should not fail for it).
Level choose() {
    const Level detected = best();
    const char *env = std::getenv("LOOM_ISA");
    if (env == nullptr || *env == '\0') return detected;
    const std::optional<Level> wanted = from_name(env);
    if (!wanted) {
        std::fprintf(stderr,
                     "loom: LOOM_ISA=%s is not a level (baseline, avx2, avx_vnni, avx512, "
                     "avx512_vnni, avx512_bf16); using %s\n",
                     env, name(detected));
        return detected;
    }
    if (!runs(*wanted)) {
        std::fprintf(stderr, "loom: LOOM_ISA=%s: this CPU does not run it; using %s\n", env,
                     name(detected));
        return detected;
    }
    return *wanted;
}
#endif

}  // namespace

Level selected() {
#if defined(LOOM_PORTABLE)
    static const Level level = choose();
    return level;
#else
    return Level::native;
#endif
}

const char *name(Level level) {
    switch (level) {
#define LOOM_ISA_CASE(level) \
    case Level::level:       \
        return #level;
        LOOM_ISA_LEVELS(LOOM_ISA_CASE)
#undef LOOM_ISA_CASE
    }
    return "?";
}

std::string describe() {
#if defined(LOOM_PORTABLE)
    const Level level = selected();
    const Level detected = best();
    if (level == detected) return fmt::format("{} (portable build, chosen at start)", name(level));
    return fmt::format("{} (portable build, set by LOOM_ISA; this CPU runs {})", name(level),
                       name(detected));
#else
    // The extensions the compiler was told the build machine has.
    std::string features;
    auto add = [&](bool on, const char *what) {
        if (on) features += fmt::format("{}{}", features.empty() ? "" : " ", what);
    };
    add(LOOM_X86_AVX2, "AVX2");
    add(LOOM_X86_FMA, "FMA");
    add(LOOM_X86_F16C, "F16C");
    add(LOOM_X86_AVXVNNI, "AVX-VNNI");
    add(LOOM_X86_AVX512F, "AVX-512F");
    add(LOOM_X86_AVX512BW, "AVX-512BW");
    add(LOOM_X86_AVX512VNNI, "AVX-512VNNI");
    add(LOOM_X86_AVX512VBMI, "AVX-512VBMI");
    return fmt::format("native (-march=native at build time: {})",
                       features.empty() ? "no x86 vector extensions" : features);
#endif
}

}  // namespace loom::isa
