#!/bin/sh
# Replays the fuzz corpora through the fuzz targets built without libFuzzer
# ($BUILD/replay/fuzz_*, tests/fuzz/replay.c): the committed seeds
# (tests/fuzz/corpus/TARGET), every input that once failed
# (tests/fuzz/regress/TARGET: each is the regression test of its fix), and
# for the GGUF target the files tests/tools/gguf_corpus writes and tiny
# models of every architecture. A target's own checks abort on a wrong
# result; under make test-asan the sanitizers watch every input too.
# `make fuzz` runs the same targets under libFuzzer (tests/fuzz/run.sh).
. tests/lib.sh
BUILD=${BUILD:-build}
W=$(mktemp -d "$OUT/fuzz.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

seeds=$W/gguf
mkdir -p "$seeds"
if "$BUILD/tools/gguf_corpus" "$W/corpus" >/dev/null 2>&1; then
    for f in "$W"/corpus/*.gguf; do cp "$f" "$seeds/"; done
    for a in "llama --type Q8_0 --tied" "qwen2 --type F16" "qwen3 --type F16 --head-dim 16" \
        "gemma3 --type F16 --swa 4 --layers 2" "phi3 --type F16 --longrope 16" \
        "llama --type TQ1_0 --dim 256 --ffn 256" "llama --type TQ2_0 --dim 256 --ffn 256"; do
        name=$(echo "$a" | tr -c 'a-z0-9\n' _)
        # shellcheck disable=SC2086
        "$BUILD/tools/gguf_random" --like "$W/corpus/valid_v3.gguf" --layers 1 --heads 2 --kv-heads 1 --ctx 64 \
            --dim 32 --ffn 32 --arch $a "$seeds/$name.bin" >/dev/null 2>&1 || echo "# gguf_random --arch $a failed"
    done
fi

for t in gguf tokenizer jinja store ini serve sse; do
    bin=$BUILD/replay/fuzz_$t
    name="fuzz: $t seeds and regression inputs replay cleanly"
    if [ ! -x "$bin" ]; then not_ok "$name" "$bin not built"; continue; fi
    if [ "$t" = tokenizer ]; then need "$TESTDATA/models/qwen3-mini-q8_0.gguf" "$name" || continue; fi
    extra=""
    [ "$t" = gguf ] && extra=$seeds
    # shellcheck disable=SC2086
    if "$bin" tests/fuzz/corpus/$t tests/fuzz/regress/$t $extra >"$W/$t.out" 2>"$W/$t.err"; then
        ok "$name ($(cat "$W/$t.out"))"
    else
        not_ok "$name" "exit $?" "$(grep -v '^replay: ' "$W/$t.err" | tail -n 5)" "last input: $(grep '^replay: ' "$W/$t.err" | tail -n 1)"
    fi
done
