#!/bin/sh
# Issue 36's table, alone: `make bench` section 9 (tests/bench.sh), i.e.
# tokscope, llama.cpp 34af94cd and ik_llama.cpp 8337e4cd (best of -rtr 0 and
# -rtr 1) one after the other on the TinyLlama-1.1B shape in Q4_0, Q8_0,
# IQ4_XS, IQ2_XXS, Q4_K_M, Q5_K_M, Q6_K, IQ3_S, IQ1_M and MXFP4 and the
# Qwen3-30B-A3B width (6 of 48 layers, Q4_K_M); pp512, tg64, tg64 @ d4096
# and pp512 @ d8192; 2 threads, F16 cache, 2 rounds of 3 repetitions. The
# Markdown table (docs/speed-ik.md's) ends the output and is kept in
# build/bench-ik.md, every result in build/bench-ik.jsonl. Run from the
# repository root after `make tokscope` (and the bench tools: `make bench`
# builds them, or this script does):
#   sh tests/bench_ik.sh
# LLAMA_BENCH (../ref/build/bin/llama-bench) and IK_BENCH
# (../ref-ik/build/bin/llama-bench) name the two; llama-quantize is taken
# from LLAMA_BENCH's folder. Any BENCH_IK_* knob of tests/bench.sh narrows
# it, e.g. BENCH_IK_ROWS=q4_0,iq4_xs BENCH_IK_TESTS=pp512,tg64; BENCH_TRIES=2
# runs tokscope and llama.cpp twice a test as ik runs twice (-rtr 0 and 1),
# the faster kept, where a host's bandwidth swings between runs. Writing the
# files takes a while the first time (the IQ2/IQ1 searches most: minutes
# per layer on a loaded 2-core machine; BENCH_IQ_LAYERS cuts them).
# BIN names the tokscope to measure (./tokscope): with the AVX2 build
# (BIN=build/avx2/tokscope, what `make` builds beside the native one) and an
# AVX2 build of ik (IK_BENCH=../ref-ik/build-avx2/bin/llama-bench; docs/
# speed-ik.md has its cmake line), and of llama.cpp for its column
# (LLAMA_BENCH=../ref/build-avx2/bin/llama-bench; llama-quantize then
# from LLAMA_QUANTIZE), the table is AVX2's on this CPU. The
# first line and the table's heading name the CPU (model name, family,
# model and, for an AMD, the core: tests/lib_cpu.sh) and each build's
# widest vector code (AVX-512 when the program or its libggml uses zmm
# registers, else AVX2).
case "${1:-}" in
-h | --help)
    sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
BUILD=${BUILD:-build}
env -u BIN make -s BUILD="$BUILD" "$BUILD/tools/gguf_random" "$BUILD/tools/membw" "$BUILD/tools/imatrix_random" || exit 1
LLAMA_BENCH=${LLAMA_BENCH:-../ref/build/bin/llama-bench} IK_BENCH=${IK_BENCH:-../ref-ik/build/bin/llama-bench} \
    BENCH_SMALL=0 BENCH_BIG=0 BENCH_FAMILIES=0 BENCH_BLAS=0 BENCH_TUI=0 BENCH_2026=0 BENCH_IQ=0 \
    BENCH_IK_TABLE=1 BUILD=$BUILD exec sh tests/bench.sh
