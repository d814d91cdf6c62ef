#!/bin/sh
# tokscope serve --parallel 4 (continuous batching, engine/engine_slots.c):
# /health and /v1/models report the slots; the load test of serve_load.sh
# (tests/tools/serve_load.py) against 4 slots: rounds of 16 concurrent
# streaming clients, a quarter hanging up, every reply well-formed and equal
# to its prompt's greedy reply alone (prompts whose top-2 margins the test
# checks), every request answered and logged, memory flat, a clean stop;
# --spec refused beside an explicit --parallel > 1; with 2 slots and --max-queue 0 two run
# and a third gets 503.
. tests/lib.sh
. tests/lib_serve.sh
S=$TESTDATA/models/stories260K.gguf
if need "$S" "serve --parallel on stories260K"; then
    name="serve --help, README, docs/serve.md and the man page name --parallel"
    "$BIN" serve --help >"$OUT/serve_par_help.txt" 2>&1
    missing=""
    grep -q -- "--parallel N" "$OUT/serve_par_help.txt" || missing="$missing help"
    grep -q -- "--parallel N" README.md || missing="$missing README"
    grep -q -- "--parallel N" docs/serve.md || missing="$missing docs"
    grep -q -- 'parallel " N' man/tokscope.1 || missing="$missing man"
    if [ -z "$missing" ]; then ok "$name"; else not_ok "$name" "missing:$missing"; fi

    name="serve refuses --spec with an explicit --parallel > 1"
    "$BIN" serve -m "$S" --port 0 --parallel 2 --spec ngram >"$OUT/serve_par_spec.out" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -q "parallel 1" "$OUT/serve_par_spec.out"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(head -c 200 "$OUT/serve_par_spec.out")"; fi

    name="serve --spec without --parallel: one slot, said in one line"
    if serve_start "$OUT/serve_par_spec1.log" -m "$S" --spec ngram; then
        serve_stop
        if [ "$(grep -c "spec runs one request at a time: 1 slot" "$OUT/serve_par_spec1.log")" = 1 ] &&
            grep -q "(queue 64, 1 slot," "$OUT/serve_par_spec1.log"; then ok "$name"
        else not_ok "$name" "$(head -n 3 "$OUT/serve_par_spec1.log")"; fi
    else not_ok "$name" "$(tail -n 3 "$OUT/serve_par_spec1.log")"; fi

    # the default is 4 slots; a request alone in them has the bits of --parallel 1
    # (its logprobs entries: logits and probabilities), chat and completion
    for n in default 1; do
        a=""
        [ $n = 1 ] && a="--parallel 1"
        # shellcheck disable=SC2086
        if serve_start "$OUT/serve_par_alone_$n.log" -m "$S" $a; then
            curl -s -o "$OUT/serve_par_alone_$n.c.json" "http://127.0.0.1:$SPORT/v1/completions" \
                -d '{"prompt":"Once upon a time","max_tokens":24,"temperature":0,"logprobs":5}'
            curl -s -o "$OUT/serve_par_alone_$n.m.json" "http://127.0.0.1:$SPORT/v1/chat/completions" \
                -d '{"messages":[{"role":"user","content":"Lily saw a dog"}],"max_tokens":24,"temperature":0.8,"seed":7,"logprobs":true,"top_logprobs":5}'
            serve_stop
        fi
    done
    name="serve without --parallel: 4 slots, and a request alone gives --parallel 1's bits"
    res=$(python3 -c 'import json,sys
d = [json.load(open(sys.argv[1] + x)) for x in (".c.json", ".m.json")]
o = [json.load(open(sys.argv[2] + x)) for x in (".c.json", ".m.json")]
print("same" if all(a["choices"] == b["choices"] and a["choices"][0].get("logprobs") for a, b in zip(d, o)) else "differ")' \
        "$OUT/serve_par_alone_default" "$OUT/serve_par_alone_1" 2>&1)
    if [ "$res" = same ] && grep -q "(queue 64, 4 slots," "$OUT/serve_par_alone_default.log"; then ok "$name"
    else not_ok "$name" "$res" "$(head -n 2 "$OUT/serve_par_alone_default.log")"; fi

    if serve_start "$OUT/serve_par_queue.log" -m "$S" --parallel 2 --max-queue 0; then
        python3 tests/tools/serve_api.py queue2 "$SPORT"
        serve_stop
    else
        not_ok "serve --parallel 2 --max-queue 0 starts" "$(tail -n 5 "$OUT/serve_par_queue.log")"
    fi

    if serve_start "$OUT/serve_par.log" -m "$S" --parallel 4; then
        name="serve --parallel 4: /health and /v1/models report 4 slots"
        h=$(python3 -c 'import sys; sys.path.insert(0, "tests/tools"); import serve_client as sc, json
o = json.loads(sc.request(sys.argv[1], "GET", "/health")[2])
m = json.loads(sc.request(sys.argv[1], "GET", "/v1/models")[2])["data"][0]["meta"]
print(o["status"], o["slots_total"], o["slots_idle"] + o["slots_processing"], m["slots_total"], m["slots_busy"])' "$SPORT" 2>&1)
        if [ "$h" = "ok 4 4 4 0" ]; then ok "$name"; else not_ok "$name" "$h"; fi
        python3 tests/tools/serve_load.py "$SPORT" "$SPID" "${SERVE_ROUNDS:-4}" "${SERVE_CLIENTS:-16}" margins \
            >"$OUT/serve_par.out" 2>&1
        grep -v '^requests ' "$OUT/serve_par.out"
        want=$(sed -n 's/^requests //p' "$OUT/serve_par.out")
        sleep 0.5
        serve_stop
        name="serve --parallel 4: every request reached the engine's log (answered or dropped)"
        got=$(grep -c '^tokscope serve: #' "$OUT/serve_par.log")
        if [ -n "$want" ] && [ "$got" -eq "$want" ]; then ok "$name"
        else not_ok "$name" "logged $got, sent ${want:-?}"; fi
        name="serve --parallel 4: the server survived and stopped cleanly"
        if [ "$SRC" -eq 0 ]; then ok "$name"; else not_ok "$name" "exit $SRC" "$(tail -n 3 "$OUT/serve_par.log")"; fi
    else
        not_ok "serve --parallel 4: the server starts" "$(tail -n 5 "$OUT/serve_par.log")"
    fi
fi
