#!/bin/sh
# Writes counts.txt here: llama.cpp 34af94cd's llama-server --spec-type
# draft-mtp on the toy files tests/golden/spec.sh writes (gguf_mtp.py SRC
# OUT 0 0.1), and --spec-type draft-simple on the qwen35 one drafted by the
# qwen35moe one (a recurrent target: the server's checkpoint and replay
# after a rejected draft, mode "draft"), one line per run: ARCH MODE
# DRAFTED ACCEPTED, from the
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
done
for run in qwen35:greedy qwen35:seeded qwen35:dmax5 qwen35moe:greedy qwen35moe:seeded qwen35moe:dmax5 qwen35:draft; do
    a=${run%%:*} mode=${run#*:}
    (
        dm=3
        spec="--spec-type draft-mtp"
        case $mode in
        greedy) body='"temperature": 0' ;;
        seeded) body='"temperature": 0.8, "seed": 42' ;;
        dmax5) body='"temperature": 0' dm=5 ;;
        draft) body='"temperature": 0' spec="--spec-type draft-simple -md $W/qwen35moe-mtp.gguf" ;;
        esac
        log=$W/$a.$mode.log
        # shellcheck disable=SC2086
        "$R/llama-server" -m "$W/$a-mtp.gguf" $spec --spec-draft-n-max $dm -c 4096 -t 2 -np 1 \
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
    ) || exit 1
    port=$((port + 1))
done
mv "$D/counts.txt.new" "$D/counts.txt"
rm -rf "$W"
cat "$D/counts.txt"
