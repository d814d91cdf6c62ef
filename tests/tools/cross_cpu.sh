#!/bin/sh
# The shared goldens on another machine's CPU, with the builds made here.
#   sh tests/tools/cross_cpu.sh pack DIR   stripped builds (native, avx2, skx),
#                                          their shared libraries and the goldens
#                                          that fit 64 MiB, as DIR/bundle.tar.xz
#   sh tests/tools/cross_cpu.sh run DIR OUT  on the other machine: every golden,
#                                          each build, -t 2 and -t 16; bit for bit
# Not a suite: CI has one CPU. docs/exactness.md gives the last result.
set -u
cmd=${1:-}; dir=${2:-.}
if [ "$cmd" = pack ]; then
    S=${TOKSCOPE_TESTDATA:-../shared} t=$(mktemp -d) || exit 1
    mkdir -p "$t/b/bin" "$t/b/lib" "$t/b/data/golden" "$t/b/data/models" "$t/b/data/iq" \
        "$t/b/data/families2026/golden" || exit 1
    strip -o "$t/b/bin/tokscope" tokscope && strip -o "$t/b/bin/tokscope_avx2" build/avx2/tokscope &&
        strip -o "$t/b/bin/tokscope_skx" build/skx/tokscope || exit 1
    for l in $(ldd tokscope | awk '/=>/ {print $3}'); do
        case $(basename "$l") in libc.so* | libm.so* | libpthread* | libdl* | librt*) ;; *) cp -L "$l" "$t/b/lib/" ;; esac
    done
    cp -r "$S/golden/logits" "$t/b/data/golden/" && cp "$S"/models/stories260K*.gguf "$S/models/tiny-spm-mix.gguf" \
        "$t/b/data/models/" && cp -r "$S/iq/models" "$S/iq/golden" "$t/b/data/iq/" &&
        cp -r "$S/families2026/models" "$t/b/data/families2026/" &&
        cp -r "$S/families2026/golden/logits" "$t/b/data/families2026/golden/" || exit 1
    mkdir -p "$dir" && XZ_OPT=-9 tar cJf "$dir/bundle.tar.xz" -C "$t" b && rm -rf "$t" && ls -la "$dir/bundle.tar.xz"
    exit
fi
[ "$cmd" = run ] || { echo "usage: cross_cpu.sh pack DIR | run DIR OUT" >&2; exit 2; }
OUT=${3:?OUT}
tar xJf "$dir/bundle.tar.xz" -C /tmp || exit 1
B=/tmp/b
export LD_LIBRARY_PATH=$B/lib
{ nproc; grep -m1 'model name' /proc/cpuinfo; grep -m1 flags /proc/cpuinfo; lscpu; ldd $B/bin/tokscope | grep 'not found'; } >"$OUT/cpu.txt" 2>&1
head -3 "$OUT/cpu.txt" | cut -c1-300
run() {
    n=$1
    shift
    [ "$t" != 2 ] && [ "$(wc -l <"$g")" -gt 258 ] && { echo "skip $n: past 256 positions the split follows -t"; return; }
    if "$@" >/tmp/c.out 2>&1; then echo "ok $n | $(tail -n1 /tmp/c.out)"; else echo "FAIL $n"; tail -n 6 /tmp/c.out; fi
}
for bin in tokscope tokscope_avx2 tokscope_skx; do
    $B/bin/$bin --version >/dev/null 2>&1 || { echo "FAIL $bin does not start here"; continue; }
    for t in 2 16; do
        for g in "$B"/data/golden/logits/*.jsonl; do
            base=$(basename "$g" .jsonl) m=$B/data/models/${base%.*}.gguf
            [ -e "$m" ] && run "$bin -t $t $base batched" $B/bin/$bin compare --top 3 -t $t -m "$m" "$g" --max-diff 0.000005
        done
        for g in "$B"/data/iq/golden/logits/*.jsonl "$B"/data/families2026/golden/logits/*.jsonl; do
            base=$(basename "$g" .jsonl) m=$(dirname "$(dirname "$(dirname "$g")")")/models/${base%.*}.gguf o=
            case $base in *1by1) o=--one-by-one ;; esac
            # shellcheck disable=SC2086 # $o is empty or one option
            run "$bin -t $t $base $o" $B/bin/$bin compare --top 3 -t $t -m "$m" "$g" $o --max-diff 0.000005
        done
    done
done >"$OUT/compare.txt" 2>&1
echo "compare: $(grep -c '^ok' "$OUT/compare.txt") passed, $(grep -c '^FAIL' "$OUT/compare.txt") failed, $(grep -c '^skip' "$OUT/compare.txt") left out"
grep -A6 '^FAIL' "$OUT/compare.txt" | head -60
