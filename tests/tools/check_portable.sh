#!/usr/bin/env bash
# A portable build (cmake --preset portable) must start and run on any x86-64 CPU: only the
# functions of a level's namespace (core/isa.h: loom::cpu::avx2::..., loom::quant::avx512::...)
# may hold instructions beyond baseline x86-64 (SSE2). This disassembles each binary given and
# fails, naming the functions, when any other function holds a VEX or EVEX instruction (every
# instruction of AVX and later, FMA and F16C are VEX or EVEX), an AVX-512 mask instruction, or
# one of BMI1/2, LZCNT, MOVBE, POPCNT, SSE3, SSSE3, SSE4.1 or SSE4.2 (not TZCNT: GCC writes
# __builtin_ctz as REP BSF for any x86-64, which older CPUs run as BSF and objdump shows as TZCNT). Such a function would be
# code that leaked out of a level, say a template or an inline function compiled for AVX-512 that
# the linker then kept for every caller: the binary would die with SIGILL on an older CPU.
#
# Usage: tests/tools/check_portable.sh BINARY...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 BINARY..."; exit 2; }
command -v objdump >/dev/null || { echo "objdump is missing: apt-get install -y binutils"; exit 1; }
status=0
for binary in "$@"; do
    [ -f "$binary" ] || { echo "no such binary: $binary"; exit 1; }
    # Level namespaces, and the baseline-only instruction check, per function.
    leaks=$(objdump -d -C --no-show-raw-insn "$binary" | awk '
        BEGIN {
            split("andn bextr blsi blsmsk blsr bzhi mulx pdep pext rorx sarx shlx shrx lzcnt " \
                  "movbe popcnt pshufb palignr pmaddubsw phaddw phaddd phaddsw phsubw " \
                  "phsubd phsubsw pabsb pabsw pabsd psignb psignw psignd pmulhrsw pmulld pminsd " \
                  "pmaxsd pminud pmaxud pminsb pmaxsb pminuw pmaxuw pblendw pblendvb blendps " \
                  "blendpd blendvps blendvpd roundps roundss roundpd roundsd dpps dppd ptest " \
                  "pcmpeqq pcmpgtq packusdw pextrb pextrd pextrq pinsrb pinsrd pinsrq insertps " \
                  "extractps mpsadbw phminposuw crc32 pcmpestri pcmpestrm pcmpistri pcmpistrm " \
                  "haddps haddpd hsubps hsubpd addsubps addsubpd movddup movshdup movsldup lddqu " \
                  "pmovsxbw pmovsxbd pmovsxbq pmovsxwd pmovsxwq pmovsxdq pmovzxbw pmovzxbd " \
                  "pmovzxbq pmovzxwd pmovzxwq pmovzxdq pmuldq movntdqa", list, " ")
            for (i in list) beyond[list[i]] = 1
        }
        /^[0-9a-f]+ <.*>:$/ {
            fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn)
            in_level = fn ~ /::(avx2|avx_vnni|avx512|avx512_vnni|avx512_bf16)::/
            next
        }
        in_level || !/^ *[0-9a-f]+:\t/ { next }
        {
            split($0, cols, "\t"); split(cols[2], words, " "); op = words[1]
            if (op ~ /^(rep|repz|repnz|lock|notrack|bnd|data16|addr32|cs|ds)$/) op = words[2]
            if ((op ~ /^v/ && op !~ /^verr|^verw/) || op ~ /^k(mov|and|or|xor|xnor|not|shift|unpck|test|ortest|add)/ ||
                (op in beyond)) {
                if (!(fn in seen)) { seen[fn] = op; print fn " (" op ")" }
            }
        }')
    if [ -n "$leaks" ]; then
        echo "$binary: functions outside the level namespaces use instructions beyond x86-64:"
        echo "$leaks" | head -40
        status=1
    else
        echo "$binary: only the level namespaces go beyond baseline x86-64"
    fi
done
exit $status
