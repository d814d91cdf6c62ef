#!/bin/sh
# tokscope serve --parallel N against llama-server -np N on the same file and
# settings, N concurrent streaming clients each (tests/tools/serve_bench.py,
# fixed-length replies), in alternating rounds so that a change of machine
# load falls on both. A benchmark, not a test: run it on a quiet machine.
#
#   sh tests/tools/serve_vs_llama.sh            (from the repository root)
#
# Environment (defaults): MODEL (/work/bench/tl-q4_0.gguf, the TinyLlama-1.1B
# shape Q4_0), NP ("4 16": slots = clients), ROUNDS (4 per N), TOKENS (64 per
# reply), THREADS (2), CTX (512 tokens per slot: llama-server gets CTX * N,
# which it splits among its slots), BIN (./tokscope), LLAMA
# (/work/ref/build/bin/llama-server), PORT (18611).
#
# Each round starts the server alone, waits for /health, runs one
# serve_bench.py round and stops it; odd rounds start with tokscope, even ones
# with llama-server. Every request carries --ban-bytes's logit_bias: llama-server
# 34af94cd cancels a reply whose text is not valid UTF-8, which random weights
# produce; without the byte tokens <0x80>..<0xFF> every reply runs to TOKENS
# (tokscope takes it as llama-server does: the same replies). A round in which any
# reply falls short is reported and left out of the means.
MODEL=${MODEL:-/work/bench/tl-q4_0.gguf}
NP=${NP:-4 16}
ROUNDS=${ROUNDS:-4}
TOKENS=${TOKENS:-64}
THREADS=${THREADS:-2}
CTX=${CTX:-512}
BIN=${BIN:-./tokscope}
LLAMA=${LLAMA:-/work/ref/build/bin/llama-server}
PORT=${PORT:-18611}
LOG=${TMPDIR:-/tmp}/serve_vs_llama.$$
mkdir -p "$LOG"

up() { # PID: /health answers ok while PID lives
    for _ in $(seq 1 600); do
        kill -0 "$1" 2>/dev/null || return 1
        curl -s "http://127.0.0.1:$PORT/health" | grep -q '"ok"' && return 0
        sleep 0.1
    done
    return 1
}

# one SERVER N ROUND: starts it, one benchmark round, stops it; prints its summary line
one() { # (sh has no locals: pid and res only here)
    case $1 in
    tokscope) "$BIN" serve -m "$MODEL" --port "$PORT" -t "$THREADS" -c "$CTX" --parallel "$2" \
        2>"$LOG/$1.$2.$3.log" &;;
    llama) "$LLAMA" -m "$MODEL" --port "$PORT" -t "$THREADS" -c $((CTX * $2)) -np "$2" \
        >"$LOG/$1.$2.$3.log" 2>&1 &;;
    esac
    pid=$!
    if up $pid; then
        res=$(python3 tests/tools/serve_bench.py --ban-bytes "$MODEL" "$PORT" "$2" "$TOKENS" 1 | tail -n 1)
    else
        res="did not start (log: $LOG/$1.$2.$3.log)"
    fi
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
    echo "np $2 round $3 $1: $res"
}

echo "# $(date -u '+%F %T') UTC; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); $MODEL; -t $THREADS; ctx $CTX per slot; $TOKENS tokens a reply"
for n in $NP; do
    r=1
    while [ $r -le "$ROUNDS" ]; do
        if [ $((r % 2)) = 1 ]; then one tokscope "$n" $r; one llama "$n" $r
        else one llama "$n" $r; one tokscope "$n" $r; fi
        r=$((r + 1))
    done
done | tee "$LOG/rounds.txt"
# the means of the rounds in which every reply ran to its length
awk '/aggregate/ && !/short/ {
        key = $2 " " $5; s[key] += $11; c[key]++
        for (i = 1; i <= NF; i++) { if ($i == "ttft") tt[key] += $(i + 2); if ($i == "latency") lt[key] += $(i + 2) }
    }
    /short|did not start/ { bad[$2 " " $5]++ }
    END {
        for (k in s) {
            split(k, a, " ")
            printf "np %s %-9s mean %.1f tok/s over %d rounds, ttft p50 %.3f s, latency p50 %.2f s%s\n", a[1], a[2],
                s[k] / c[k], c[k], tt[k] / c[k], lt[k] / c[k], bad[k] ? " (" bad[k] " rounds left out)" : ""
        }
        for (k in s) {
            split(k, a, " ")
            if (a[2] == "tokscope:" && s[a[1] " llama:"] > 0)
                printf "np %s tokscope / llama-server = %.2fx\n", a[1], (s[k] / c[k]) / (s[a[1] " llama:"] / c[a[1] " llama:"])
        }
    }' "$LOG/rounds.txt" | sort
echo "# logs: $LOG"
