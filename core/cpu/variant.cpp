// The kernels of this build's instruction-set level (core/isa.h), gathered for the dispatcher.
#include "core/cpu/kernels.h"
#include "core/cpu/repack.h"

namespace loom::cpu::inline LOOM_ISA {

const Variant &variant() {
    // Built at the first call, not at start: in a portable build every level's code is in the
    // binary, and only the selected one may run on this CPU.
    static const Variant v = [] {
        Variant t{.table = {},
                  .repack_buffer_type = level_repack_buffer_type,
                  .has_repacked_layout = level_has_layout,
                  .can_repack = level_can_repack,
                  .is_repacked = level_is_repacked,
                  .bf16_pairs = LOOM_X86_AVX512BF16 != 0};
        register_layout_kernels(t.table);
        register_rows_kernels(t.table);
        register_elementwise_kernels(t.table);
        register_unary_kernels(t.table);
        register_reduce_kernels(t.table);
        register_sort_kernels(t.table);
        register_matmul_kernels(t.table);
        register_norm_kernels(t.table);
        register_rope_kernels(t.table);
        register_hadamard_kernels(t.table);
        register_softmax_kernels(t.table);
        register_attention_kernels(t.table);
        return t;
    }();
    return v;
}

}  // namespace loom::cpu::LOOM_ISA
