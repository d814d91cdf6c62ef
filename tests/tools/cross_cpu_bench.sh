#!/bin/sh
# tokscope against llama.cpp and ik_llama.cpp on another machine's CPU, with
# the builds made here (what docs/speed-ik.md's Xeon tables were measured with).
#   sh tests/tools/cross_cpu_bench.sh pack DIR
#       the native tokscope, gguf_random, imatrix_random, llama.cpp's
#       llama-bench and llama-quantize (LLAMA_BIN, default ../ref/build/bin),
#       ik's llama-bench (IK_BIN, default ../ref-ik/build), all stripped, with
#       their shared libraries and tiny-spm-q4_0.gguf (the tokenizer the
#       generated files borrow), as DIR/bench.tar.xz (about 30 MB)
#   sh tests/tools/cross_cpu_bench.sh run DIR OUT [TEST]
#       on the other machine: writes the TinyLlama-1.1B shape's files there and
#       runs, per round (2) and file, tokscope, llama-bench, ik -rtr 0, ik -rtr 1
#       one after the other, threads T (default: all). TEST: dense (Q4_0, Q8_0,
#       Q4_K_M; pp512 and tg64), iq (IQ4_XS, IQ3_S, IQ2_XXS, IQ1_M cut to 4
#       layers, quantized with a random importance matrix; pp512 and tg64) or
#       depth (Q8_0, Q4_K_M; tg64 @ d4096, ik's -gp 4096,64). TYPES overrides
#       the files. Every result goes to OUT/raw.txt; the ratios of the best
#       means are printed.
# Not a suite: CI has one CPU and no second machine.
set -u
cmd=${1:-}
dir=${2:-.}
if [ "$cmd" = pack ]; then
    S=${TOKSCOPE_TESTDATA:-../shared} LB=${LLAMA_BIN:-../ref/build/bin} IK=${IK_BIN:-../ref-ik/build}
    t=$(mktemp -d) || exit 1
    c=$t/c
    mkdir -p "$c/bin" "$c/lib" "$c/ref" "$c/ik" || exit 1
    make -s build/tools/gguf_random build/tools/imatrix_random || exit 1
    strip -o "$c/bin/tokscope" tokscope && strip -o "$c/bin/gguf_random" build/tools/gguf_random &&
        strip -o "$c/bin/imatrix_random" build/tools/imatrix_random || exit 1
    for f in llama-bench llama-quantize libllama-bench-impl.so libllama-quantize-impl.so libllama-common.so.0 \
        libllama.so.0 libggml.so.0 libggml-base.so.0 libggml-cpu.so.0; do
        strip -o "$c/ref/$f" "$LB/$f" || exit 1
    done
    strip -o "$c/ik/llama-bench" "$IK/bin/llama-bench" && strip -o "$c/ik/libllama.so" "$IK/src/libllama.so" &&
        strip -o "$c/ik/libggml.so" "$IK/ggml/src/libggml.so" || exit 1
    # every system library any of them loads, but the C library's own
    for b in tokscope "$LB/llama-bench" "$LB/llama-quantize" "$IK/bin/llama-bench"; do
        ldd "$b" | awk '/=> \// {print $3}'
    done | sort -u | while read -r l; do
        case $(basename "$l") in libc.so* | libm.so* | libpthread* | libdl* | librt*) ;; *) cp -L "$l" "$c/lib/" ;; esac
    done
    cp "$S/models/tiny-spm-q4_0.gguf" "$c/" || exit 1
    mkdir -p "$dir" && XZ_OPT=-9 tar cJf "$dir/bench.tar.xz" -C "$t" c && rm -rf "$t" && ls -la "$dir/bench.tar.xz"
    exit
fi
[ "$cmd" = run ] || {
    echo "usage: cross_cpu_bench.sh pack DIR | run DIR OUT [dense|iq|depth]" >&2
    exit 2
}
OUT=${3:?OUT}
test=${4:-dense}
tar xJf "$dir/bench.tar.xz" -C /tmp || exit 1
C=/tmp/c L=/tmp/c/lib T=${T:-$(nproc)}
case $test in
dense) types=${TYPES:-Q4_0 Q8_0 Q4_K_M} layers=22 ;;
iq) types=${TYPES:-IQ4_XS IQ3_S IQ2_XXS IQ1_M} layers=4 ;;
depth) types=${TYPES:-Q8_0 Q4_K_M} layers=22 ;;
*) echo "cross_cpu_bench: no test '$test'" >&2 && exit 2 ;;
esac
. "$(dirname "$0")/../lib_cpu.sh"
{ cpu_name; nproc; } | tee "$OUT/cpu.txt"
shape="--dim 2048 --layers $layers --heads 32 --kv-heads 4 --ffn 5632"
if [ "$test" = iq ]; then
    # shellcheck disable=SC2086 # the shape is meant to split
    $C/bin/gguf_random --like $C/tiny-spm-q4_0.gguf --type F16 $shape /tmp/f16.gguf >/dev/null 2>&1 &&
        $C/bin/imatrix_random /tmp/f16.gguf /tmp/im.dat >/dev/null 2>&1 || exit 1
    for ty in $types; do
        LD_LIBRARY_PATH=$C/ref:$L $C/ref/llama-quantize --imatrix /tmp/im.dat /tmp/f16.gguf "/tmp/tl_$ty.gguf" "$ty" "$T" \
            >/dev/null 2>&1 || echo "llama-quantize $ty failed"
    done
else
    for ty in $types; do
        # shellcheck disable=SC2086 # the shape is meant to split
        $C/bin/gguf_random --like $C/tiny-spm-q4_0.gguf --type "$ty" $shape "/tmp/tl_$ty.gguf" >/dev/null 2>&1 ||
            echo "gguf_random $ty failed"
    done
fi
if [ "$test" = depth ]; then
    tt="-p 0 -n 64 -d 4096 -r 2" ik_tt="-p 0 -n 0 -gp 4096,64 -r 2"
else
    tt="-p 512 -n 64 -r 3" ik_tt=$tt
fi
ik_jsonl() { python3 -c 'import json,sys; [print(json.dumps(x)) for x in json.load(sys.stdin)]'; }
for r in 1 2; do
    for ty in $types; do
        m=/tmp/tl_$ty.gguf
        # shellcheck disable=SC2086 # the test options are meant to split
        {
            LD_LIBRARY_PATH=$L $C/bin/tokscope bench -m "$m" $tt -t "$T" -o jsonl 2>/dev/null | sed "s/^/tok $ty r$r /"
            LD_LIBRARY_PATH=$C/ref:$L $C/ref/llama-bench -m "$m" $tt -t "$T" -o jsonl 2>/dev/null | sed "s/^/ref $ty r$r /"
            for rtr in 0 1; do
                LD_LIBRARY_PATH=$C/ik:$L $C/ik/llama-bench -m "$m" $ik_tt -t "$T" -rtr $rtr -o json 2>/dev/null | ik_jsonl |
                    sed "s/^/ik$rtr $ty r$r /"
            done
        } >>"$OUT/raw.txt"
        date +%T
    done
done
python3 - "$OUT/raw.txt" "$types" <<'EOF'
import collections, json, sys
best = collections.defaultdict(list)
for line in open(sys.argv[1]):
    eng, ty, _, js = line.split(' ', 3)
    try:
        j = json.loads(js)
    except ValueError:
        continue
    if j.get('n_depth') or (j['n_prompt'] and j['n_gen']):  # a depth test (ik's -gp: n_prompt and n_gen)
        test = 'tg%d@d%d' % (j['n_gen'], j.get('n_depth') or j['n_prompt'])
    else:
        test = 'pp%d' % j['n_prompt'] if j['n_prompt'] else 'tg%d' % j['n_gen']
    best[(ty, test, eng)].append(j['avg_ts'])
tests = sorted({k[1] for k in best})
for ty in sys.argv[2].split():
    for test in tests:
        g = lambda e: best.get((ty, test, e), [])
        tok, ref, ik = g('tok'), g('ref'), g('ik0') + g('ik1')
        f = lambda v: '/'.join('%.1f' % x for x in v)
        if tok and ref and ik:
            print(ty, test, 'tokscope', f(tok), 'llama.cpp', f(ref), 'ik', f(g('ik0')), 'ik rtr', f(g('ik1')),
                  'tokscope/llama.cpp %.2f tokscope/ik %.2f' % (max(tok) / max(ref), max(tok) / max(ik)))
EOF
