#!/bin/sh
# Writes counts_gemma4.txt here: llama.cpp 34af94cd's llama-server
# --spec-type draft-mtp with a Gemma 4 assistant file (-md) on the toy pair
# tests/golden/spec.sh uses (gemma4-mini-q8_0.gguf from ../shared and the
# assistant tests/tools/gguf_g4assist.py writes for it), one line per run:
# gemma4 MODE DRAFTED ACCEPTED (greedy: 3 drafts; seeded: temperature 0.8,
# seed 42; dmax5: 5; q8kv: a Q8_0 K and V cache; q4k: a Q4_0 K cache), from the server's 'draft acceptance = ...
# (A accepted / D generated)' log line (it logs them even when it answers
# the random model's reply with a 500, which is why no tokens are kept).
# The seeded run compares since tokscope draws with llama.cpp's std::mt19937
# (engine/sampler/rng.c; its log's 'unparsed Content-only output' line shows
# the reply's start, tokscope generate's at the same seed).
# Also g4assist_logits.txt: the assistant's draft logits for two prompts
# (g4assist_logits.cpp), which unit/test_spec_g4assist compares bit for bit.
# Run from the repository root: sh tests/golden/reference/mtp/make_gemma4.sh
# (REF=/work/ref/build/bin by default, TESTDATA=../shared).
set -u
R=${REF:-/work/ref/build/bin}
T=${TESTDATA:-../shared}/families2026/models/gemma4-mini-q8_0.gguf
D=tests/golden/reference/mtp
W=$(mktemp -d)
P="Once upon a time there was a little girl. Once upon a time there was a little boy. Once upon a time"
port=18471
: >"$D/counts_gemma4.txt.new"
python3 tests/tools/gguf_g4assist.py "$T" "$W/assist.gguf" || exit 1
for mode in greedy seeded dmax5 q8kv q4k; do
    dm=3 kv=""
    body='"temperature": 0'
    case $mode in
    seeded) body='"temperature": 0.8, "seed": 42' ;;
    dmax5) dm=5 ;;
    q8kv) kv="-ctk q8_0 -ctv q8_0" ;;
    q4k) kv="-ctk q4_0 -ctv f16" ;;
    esac
    log=$W/$mode.log
    # shellcheck disable=SC2086
    "$R/llama-server" -m "$T" -md "$W/assist.gguf" --spec-type draft-mtp --spec-draft-n-max $dm -c 4096 -t 2 \
        -np 1 $kv --port $port >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do
        curl -s "http://127.0.0.1:$port/health" 2>/dev/null | grep -q ok && break
        sleep 1
    done
    curl -s -o "$W/$mode.json" "http://127.0.0.1:$port/completion" \
        -d "{\"prompt\": \"$P\", \"n_predict\": 120, $body, \"cache_prompt\": false}"
    sleep 1
    kill $pid
    wait $pid 2>/dev/null
    c=$(sed -n 's/.*draft acceptance = [0-9.]* ( *\([0-9]*\) accepted \/ *\([0-9]*\) generated).*/\2 \1/p' "$log")
    [ -n "$c" ] || { echo "gemma4 $mode: no 'draft acceptance' line in $log" >&2; exit 1; }
    echo "gemma4 $mode $c" >>"$D/counts_gemma4.txt.new"
    port=$((port + 1))
done
mv "$D/counts_gemma4.txt.new" "$D/counts_gemma4.txt"
# the assistant's logits, bit for bit (g4assist_logits.cpp against libllama;
# REFSRC: the reference's source tree, for its headers)
S=${REFSRC:-/work/ref}
g++ -O1 -std=c++17 -I"$S/include" -I"$S/src" -I"$S/ggml/include" "$D/g4assist_logits.cpp" -o "$W/g4l" -L"$R" \
    -lllama -lggml -lggml-base -Wl,-rpath,"$R" || exit 1
{
    "$W/g4l" "$T" "$W/assist.gguf" 3 1 400 300 200 100 50 25 7 311 2>/dev/null &&
        # shellcheck disable=SC2046
        "$W/g4l" "$T" "$W/assist.gguf" 4 1 $(seq 3 11 460) 2>/dev/null
} >"$D/g4assist_logits.txt" || exit 1
rm -rf "$W"
cat "$D/counts_gemma4.txt"
