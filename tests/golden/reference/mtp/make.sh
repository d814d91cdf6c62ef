#!/bin/sh
# Writes counts.txt here: llama.cpp 34af94cd's llama-server --spec-type
# draft-mtp on the toy files tests/golden/spec.sh writes (gguf_mtp.py SRC
# OUT 0 0.1), one line per run: ARCH MODE DRAFTED ACCEPTED, from the
# server's 'draft acceptance = ... (A accepted / D generated)' log line
# (it logs them even when it answers a random model's reply with a 500).
# Run from the repository root: sh tests/golden/reference/mtp/make.sh
# (REF=/work/ref/build/bin by default, TESTDATA=../shared).
set -u
R=${REF:-/work/ref/build/bin}
Q=${TESTDATA:-../shared}/families2026/models
D=tests/golden/reference/mtp
W=$(mktemp -d)
P="Once upon a time there was a little girl. Once upon a time there was a little boy. Once upon a time"
port=18431
: >"$D/counts.txt.new"
for a in qwen35 qwen35moe; do
    python3 tests/tools/gguf_mtp.py "$Q/$a-mini-q8_0.gguf" "$W/$a-mtp.gguf" 0 0.1 || exit 1
    for mode in greedy seeded dmax5; do
        dm=3
        case $mode in
        greedy) body='"temperature": 0' ;;
        seeded) body='"temperature": 0.8, "seed": 42' ;;
        dmax5) body='"temperature": 0' dm=5 ;;
        esac
        log=$W/$a.$mode.log
        "$R/llama-server" -m "$W/$a-mtp.gguf" --spec-type draft-mtp --spec-draft-n-max $dm -c 4096 -t 2 -np 1 \
            --port $port >"$log" 2>&1 &
        pid=$!
        for _ in $(seq 1 120); do
            curl -s "http://127.0.0.1:$port/health" 2>/dev/null | grep -q ok && break
            sleep 1
        done
        curl -s -o "$W/$a.$mode.json" "http://127.0.0.1:$port/completion" \
            -d "{\"prompt\": \"$P\", \"n_predict\": 120, $body, \"cache_prompt\": false}"
        sleep 1
        kill $pid
        wait $pid 2>/dev/null
        c=$(sed -n 's/.*draft acceptance = [0-9.]* ( *\([0-9]*\) accepted \/ *\([0-9]*\) generated).*/\2 \1/p' "$log")
        [ -n "$c" ] || { echo "$a $mode: no 'draft acceptance' line in $log" >&2; exit 1; }
        echo "$a $mode $c" >>"$D/counts.txt.new"
        port=$((port + 1))
    done
done
mv "$D/counts.txt.new" "$D/counts.txt"
rm -rf "$W"
cat "$D/counts.txt"
