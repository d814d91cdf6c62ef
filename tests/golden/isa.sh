#!/bin/sh
# Instructions the OS may not have enabled. The Intel Xeons these builds run
# on list AMX in cpuinfo, but the sandbox does not grant the AMX tile state
# (a process must ask for it with arch_prctl, and is refused): an AMX
# instruction there dies with SIGILL, as ggml's AMX matmul does when the
# reference is built with -march=native. tokscope has no AMX code path, and
# GCC emits AMX instructions only from their intrinsics; this holds every
# build the tests run to that. (AVX-512 itself is only in the build when the
# CPU and OS report it: -march=native reads what the kernel left enabled.)
. tests/lib.sh
AMX='ldtilecfg|sttilecfg|tileloadd|tileloaddt1|tilestored|tilezero|tilerelease|tdpb[su][su]d|tdpbf16ps|tdpfp16ps|tcmmimfp16ps|tcmmrlfp16ps'
for bin in "$BIN" $(variants); do
    [ -x "$bin" ] || continue
    n=$(objdump -d "$bin" | grep -cE "[[:space:]]($AMX)[[:space:]]")
    label="the $(build_label "$bin")"
    [ "$bin" = "$BIN" ] && label="the native build"
    if [ "$n" -eq 0 ]; then ok "no AMX instruction in $label"
    else not_ok "no AMX instruction in $label" "$n AMX instructions: $(objdump -d "$bin" | grep -E "[[:space:]]($AMX)[[:space:]]" | head -n 2)"; fi
done
