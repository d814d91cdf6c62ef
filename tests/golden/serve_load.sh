#!/bin/sh
# Bounded load test of tokscope serve on loopback (tests/tools/serve_load.py):
# rounds of 32 concurrent streaming clients, a quarter hanging up
# mid-stream; no crash, every reply well-formed and equal to its prompt's
# greedy text, no request lost (each one answered, and each one in the
# server's log), the server's memory flat across rounds (no growth every
# round, none beyond 8 MiB: serve_load.py's memory_flat), a clean stop.
. tests/lib.sh
. tests/lib_serve.sh
# the flat-memory criterion itself (a warm-up step passes, a leak fails)
python3 tests/tools/serve_load.py selftest
S=$TESTDATA/models/stories260K.gguf
if need "$S" "serve load test on stories260K"; then
    if serve_start "$OUT/serve_load.log" -m "$S" --parallel 1; then  # one slot: serve_parallel.sh loads 4
        python3 tests/tools/serve_load.py "$SPORT" "$SPID" "${SERVE_ROUNDS:-5}" "${SERVE_CLIENTS:-32}" \
            >"$OUT/serve_load.out" 2>&1
        grep -v '^requests ' "$OUT/serve_load.out"
        want=$(sed -n 's/^requests //p' "$OUT/serve_load.out")
        sleep 0.5
        serve_stop
        name="serve load: every request reached the engine's log (answered or dropped)"
        got=$(grep -c '^tokscope serve: #' "$OUT/serve_load.log")
        if [ -n "$want" ] && [ "$got" -eq "$want" ]; then ok "$name"
        else not_ok "$name" "logged $got, sent ${want:-?}"; fi
        name="serve load: the server survived and stopped cleanly"
        if [ "$SRC" -eq 0 ]; then ok "$name"; else not_ok "$name" "exit $SRC" "$(tail -n 3 "$OUT/serve_load.log")"; fi
    else
        not_ok "serve load: the server starts" "$(tail -n 5 "$OUT/serve_load.log")"
    fi
fi
