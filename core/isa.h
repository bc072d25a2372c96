#pragma once
// Instruction-set levels: which x86 extensions the kernels (core/cpu, the block formats' dot
// products in core/quant) are compiled for, and which of those builds runs.
//
// A native build (-DLOOM_NATIVE=ON, the default) compiles them once, for the build machine
// (-march=native), in the namespace `native`. A portable build (-DLOOM_NATIVE=OFF) targets
// baseline x86-64 and compiles them once per level below, each in a namespace of the level's
// name (loom::cpu::avx2::..., loom::quant::avx512::...) with that level's extensions enabled by
// `#pragma GCC target` (core/isa_variant.h); at the first use of a dtype's traits or a kernel the
// process asks the CPU (cpuid) and uses the best level it runs. Everything outside those
// namespaces stays baseline x86-64, which tests/tools/check_portable.sh checks on the
// disassembly.
//
// The kernel sources test the LOOM_X86_* macros below, never the compiler's __AVX2__ & co.:
// GCC does not define those under `#pragma GCC target` in C++.
#include <string>

#if defined(LOOM_ISA_VARIANT)  // one level's objects in a portable build: the level says
#define LOOM_ISA LOOM_ISA_VARIANT
#define LOOM_ISA_FEATURES_(level) LOOM_ISA_FEATURES_##level
#define LOOM_ISA_FEATURES(level) LOOM_ISA_FEATURES_(level)
// Feature bits of a level (the same sets as isa.cpp's detection and isa_variant.h's targets).
#define LOOM_ISA_FEATURES_baseline 0
#define LOOM_ISA_FEATURES_avx2 1                // AVX2, FMA, F16C, BMI1/2 (x86-64-v3)
#define LOOM_ISA_FEATURES_avx_vnni (1 | 2)      // + AVX-VNNI (Alder Lake and later client cores)
#define LOOM_ISA_FEATURES_avx512 (1 | 4)        // + AVX-512 F/CD/BW/DQ/VL (x86-64-v4)
#define LOOM_ISA_FEATURES_avx512_vnni (1 | 12)  // + AVX-512 VNNI (Cascade Lake, Ice Lake)
#define LOOM_ISA_FEATURES_avx512_bf16 (1 | 28)  // + AVX-512 BF16 (Sapphire Rapids, Zen 4 and 5)
#define LOOM_ISA_HAS_(bit) ((LOOM_ISA_FEATURES(LOOM_ISA_VARIANT) & (bit)) != 0)
#define LOOM_X86_AVX2 LOOM_ISA_HAS_(1)
#define LOOM_X86_FMA LOOM_ISA_HAS_(1)
#define LOOM_X86_F16C LOOM_ISA_HAS_(1)
#define LOOM_X86_AVXVNNI LOOM_ISA_HAS_(2)
#define LOOM_X86_AVX512F LOOM_ISA_HAS_(4)
#define LOOM_X86_AVX512BW LOOM_ISA_HAS_(4)
#define LOOM_X86_AVX512VL LOOM_ISA_HAS_(4)
#define LOOM_X86_AVX512VNNI LOOM_ISA_HAS_(8)
#define LOOM_X86_AVX512BF16 LOOM_ISA_HAS_(16)
#define LOOM_X86_AVX512VBMI 0  // not in any level: Cascade Lake has VNNI without it
#else                          // what the compiler targets (-march)
#if defined(LOOM_PORTABLE)
#define LOOM_ISA baseline  // a portable build's ISA-neutral code sees the baseline build
#else
#define LOOM_ISA native
#endif
#if defined(__AVX2__)
#define LOOM_X86_AVX2 1
#else
#define LOOM_X86_AVX2 0
#endif
#if defined(__FMA__)
#define LOOM_X86_FMA 1
#else
#define LOOM_X86_FMA 0
#endif
#if defined(__F16C__)
#define LOOM_X86_F16C 1
#else
#define LOOM_X86_F16C 0
#endif
#if defined(__AVXVNNI__)
#define LOOM_X86_AVXVNNI 1
#else
#define LOOM_X86_AVXVNNI 0
#endif
#if defined(__AVX512F__)
#define LOOM_X86_AVX512F 1
#else
#define LOOM_X86_AVX512F 0
#endif
#if defined(__AVX512BW__)
#define LOOM_X86_AVX512BW 1
#else
#define LOOM_X86_AVX512BW 0
#endif
#if defined(__AVX512VL__)
#define LOOM_X86_AVX512VL 1
#else
#define LOOM_X86_AVX512VL 0
#endif
#if defined(__AVX512VNNI__)
#define LOOM_X86_AVX512VNNI 1
#else
#define LOOM_X86_AVX512VNNI 0
#endif
#if defined(__AVX512BF16__)
#define LOOM_X86_AVX512BF16 1
#else
#define LOOM_X86_AVX512BF16 0
#endif
#if defined(__AVX512VBMI__)
#define LOOM_X86_AVX512VBMI 1
#else
#define LOOM_X86_AVX512VBMI 0
#endif
#endif

// The levels a build holds, for the dispatchers (core/dtype.cpp, core/cpu/dispatch.cpp).
#if defined(LOOM_PORTABLE)
#define LOOM_ISA_LEVELS(X) X(baseline) X(avx2) X(avx_vnni) X(avx512) X(avx512_vnni) X(avx512_bf16)
#else
#define LOOM_ISA_LEVELS(X) X(native)
#endif

namespace loom::isa {

enum class Level {
#define LOOM_ISA_ENUM(level) level,
    LOOM_ISA_LEVELS(LOOM_ISA_ENUM)
#undef LOOM_ISA_ENUM
};

// The level whose kernels run, chosen once: in a portable build the best this CPU runs, or the
// one named by the environment variable LOOM_ISA (to compare levels or test a lower one on a
// newer CPU; a level this CPU cannot run, or an unknown name, is an error); in a native build
// the one there is.
Level selected();
const char *name(Level level);
// For `loom --version` and bench headers: the kernels in use and how they were chosen.
std::string describe();

}  // namespace loom::isa
