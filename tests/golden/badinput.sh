#!/bin/sh
# Bad input outside the TUI: a prompt longer than the context and a
# generation that outgrows it, under both context policies of `generate`
# (stop with a clear message, or --context-shift); a model file truncated or
# deleted while `generate` has it mapped (a message naming the file and exit
# status 1, never death by SIGBUS, one whole line however many threads fault
# at once; a deleted file stays readable).
. tests/lib.sh
M=$TESTDATA/models/stories260K.gguf
W=$(mktemp -d "$OUT/badinput.XXXXXX") || exit 1
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$W"' EXIT
LONG="Once upon a time there was a little girl named Lily. She loved to play outside in the park with her friend Ben."

name="generate: a prompt longer than the context is refused by default, naming both sizes"
if need "$M" "$name"; then
    "$BIN" generate -m "$M" -p "$LONG" -c 16 -n 5 --temp 0 >"$W/out" 2>"$W/err"
    rc=$?
    if [ $rc -eq 1 ] && [ ! -s "$W/out" ] && grep -q 'the prompt (36 tokens) does not fit the context of 16 tokens' "$W/err" \
        && grep -q -- '--context-shift' "$W/err"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(cat "$W/err")"; fi

    name="generate --context-shift: a prompt longer than the context keeps its start and end"
    "$BIN" generate -m "$M" -p "$LONG" -c 16 -n 5 --temp 0 --context-shift >"$W/out" 2>"$W/err"
    rc=$?
    # BOS and the last (16 - 1) / 2 = 7 tokens: the same as giving those ids
    ids=$("$BIN" tokenize -m "$M" -p "$LONG" 2>/dev/null | tr -s ' ,\n' ' ' | awk '{printf "%s", $1; for (i = NF - 6; i <= NF; i++) printf ",%s", $i}')
    "$BIN" generate -m "$M" --tokens "$ids" -c 16 -n 5 --temp 0 >"$W/want" 2>/dev/null
    if [ $rc -eq 0 ] && [ -s "$W/out" ] && cmp -s "$W/out" "$W/want" &&
        grep -q 'context shift: the prompt (36 tokens) is longer than the context (16): kept the first 1 and the last 7' "$W/err"; then
        ok "$name"
    else not_ok "$name" "exit $rc" "got:  $(cat "$W/out")" "want: $(cat "$W/want") (ids $ids)" "$(cat "$W/err")"; fi

    name="generate: a reply that fills the context stops there by default"
    "$BIN" generate -m "$M" -p "Once" -c 32 -n 100 --temp 0 >"$W/out" 2>"$W/err"
    rc=$?
    if [ $rc -eq 0 ] && grep -q 'generation: 31 tokens.*stop: context full; blas ' "$W/err"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(tail -n 1 "$W/err")"; fi

    name="generate --context-shift: the reply goes on past the context, the cache matches a recomputation"
    "$BIN" generate -m "$M" -p "Once" -c 32 -n 100 --temp 0 --context-shift >"$W/out" 2>"$W/err"
    rc=$?
    "$BIN" generate -m "$M" -p "Once" -c 32 -n 100 --temp 0 --context-shift --no-kv-cache >"$W/want" 2>/dev/null
    if [ $rc -eq 0 ] && grep -q 'generation: 100 tokens.*stop: length; [0-9]* context shifts; blas ' "$W/err" &&
        cmp -s "$W/out" "$W/want"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(tail -n 1 "$W/err")" "cached:    $(head -c 100 "$W/out")" "recomputed: $(head -c 100 "$W/want")"; fi
fi

# wait_for_bytes FILE: until FILE has some bytes (10 s at most)
wait_for_bytes() {
    n=200
    while [ "$n" -gt 0 ] && [ ! -s "$1" ]; do sleep 0.05; n=$((n - 1)); done
    [ -s "$1" ]
}
# wait_exit PID: until it ends (30 s at most); its status is in $W/rc
wait_gone() {
    n=600
    while [ "$n" -gt 0 ] && kill -0 "$1" 2>/dev/null; do sleep 0.05; n=$((n - 1)); done
    ! kill -0 "$1" 2>/dev/null
}

name="generate: a model truncated while mapped ends with a message naming it, exit 1, not SIGBUS"
if need "$M" "$name"; then
    cp "$M" "$W/model.gguf"
    ( "$BIN" generate -m "$W/model.gguf" -p "Once" -n 1000000 --context-shift >"$W/gen.out" 2>"$W/gen.err"
      echo $? >"$W/rc" ) &
    pids="$pids $!"
    if wait_for_bytes "$W/gen.out"; then
        truncate -s 4096 "$W/model.gguf"
        wait_gone "$!"
    fi
    rc=$(cat "$W/rc" 2>/dev/null)
    if [ "$rc" = 1 ] && grep -q "^tokscope: $W/model.gguf: the model file was truncated or changed while in use (its byte [0-9]* is gone); stopping$" "$W/gen.err"; then
        ok "$name"
    else not_ok "$name" "exit ${rc:-none} (135 = SIGBUS)" "$(tail -n 3 "$W/gen.err")"; fi

    # Several threads read the weights at once, so several fault on the
    # truncated pages together: exactly one of them may report, in one line.
    # -c 64 with --context-shift re-evaluates half the context every 32
    # tokens (a prompt batch), -n 1000000 never stops by itself.
    T=$TESTDATA/models/tiny-spm-f16.gguf
    name="generate: a model truncated under 8 threads prints exactly one well-formed line (5 runs)"
    if need "$T" "$name"; then
        bad_runs=""
        for run in 1 2 3 4 5; do
            cp "$T" "$W/race.gguf"
            rm -f "$W/race.rc" "$W/race.out"
            ( "$BIN" generate -m "$W/race.gguf" -p "Once upon a time" -n 1000000 -c 64 --context-shift -t 8 --temp 0 \
                  >"$W/race.out" 2>"$W/race.err"
              echo $? >"$W/race.rc" ) &
            rpid=$!
            pids="$pids $rpid"
            wait_for_bytes "$W/race.out" && truncate -s 4096 "$W/race.gguf"
            wait_gone "$rpid"
            rrc=$(cat "$W/race.rc" 2>/dev/null)
            # the whole of stderr: one line, the message, nothing interleaved
            if [ "$rrc" != 1 ] || [ "$(wc -l <"$W/race.err")" != 1 ] ||
                ! grep -qx "tokscope: $W/race.gguf: the model file was truncated or changed while in use (its byte [0-9]* is gone); stopping" "$W/race.err"; then
                bad_runs="$bad_runs run $run: exit ${rrc:-none}: $(head -c 600 "$W/race.err" | tr '\n' '|');"
            fi
        done
        if [ -z "$bad_runs" ]; then ok "$name"
        else not_ok "$name" "$bad_runs"; fi
    fi

    name="generate: a model deleted while mapped goes on being read"
    cp "$M" "$W/model2.gguf"
    "$BIN" generate -m "$W/model2.gguf" -p "Once" -n 1000000 --context-shift >"$W/gen2.out" 2>"$W/gen2.err" &
    pid=$!
    pids="$pids $pid"
    if wait_for_bytes "$W/gen2.out"; then
        rm "$W/model2.gguf"
        s1=$(wc -c <"$W/gen2.out")
        sleep 1
        s2=$(wc -c <"$W/gen2.out")
    fi
    if kill -0 "$pid" 2>/dev/null && [ "${s2:-0}" -gt "${s1:-0}" ]; then ok "$name"
    else not_ok "$name" "output $s1 -> $s2 bytes" "$(tail -n 3 "$W/gen2.err")"; fi
    kill "$pid" 2>/dev/null
fi
