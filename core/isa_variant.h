#pragma once
// Force-included (-include) at the top of every source of one level's objects in a portable
// build (core/isa.h, CMakeLists.txt's loom_add_level_sources). It first includes every header
// those sources use whose code lives outside the level namespaces, the C++ library's, fmt's and
// Loom's ISA-neutral ones, so that their inline functions and templates are compiled for
// baseline x86-64 as in every other object: the linker keeps one copy of each, whichever object
// it comes from, and that copy must run on any CPU. Then it enables the level's extensions for
// the rest of the source. A function compiled for baseline still inlines into one compiled for
// more.
#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cpu/kernels.h"
#include "core/cpu/threadpool.h"
#include "core/isa.h"
#include "core/op_params.h"
#include "loom/backend.h"
#include "loom/core.h"
#include "loom/cpu.h"
#include "loom/error.h"
#include "loom/fp16.h"
#include "loom/tensor.h"

// Each level's extensions: the sets LOOM_ISA_FEATURES_* in core/isa.h names and isa.cpp detects.
#define LOOM_ISA_TARGET_baseline "sse2"
#define LOOM_ISA_TARGET_avx2 \
    "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe"
#define LOOM_ISA_TARGET_avx_vnni \
    "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe,avxvnni"
#define LOOM_ISA_TARGET_avx512                                                        \
    "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe,avx512f," \
    "avx512cd,avx512bw,avx512dq,avx512vl"
#define LOOM_ISA_TARGET_avx512_vnni                                                   \
    "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe,avx512f," \
    "avx512cd,avx512bw,avx512dq,avx512vl,avx512vnni"
#define LOOM_ISA_TARGET_avx512_bf16                                                   \
    "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe,avx512f," \
    "avx512cd,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16"

#define LOOM_ISA_TARGET_(level) LOOM_ISA_TARGET_##level
#define LOOM_ISA_TARGET(level) LOOM_ISA_TARGET_(level)
#define LOOM_ISA_PRAGMA_(text) _Pragma(#text)
#define LOOM_ISA_PRAGMA(text) LOOM_ISA_PRAGMA_(text)
LOOM_ISA_PRAGMA(GCC target(LOOM_ISA_TARGET(LOOM_ISA_VARIANT)))
