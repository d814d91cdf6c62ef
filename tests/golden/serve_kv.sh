#!/bin/sh
# tokscope serve --parallel 1 --kv-dir: the cached conversation's KV cache goes to
# DIR/MODEL.kv after every request and comes back at the next start, so a
# restarted server answers a request that extends the conversation without
# evaluating what it held: the reply's usage.prompt_tokens_details
# .cached_tokens and the log's "(N evaluated)" say so (counts, not timing),
# and the reply is the one a fresh server gives. A stale snapshot (another
# model's) and a corrupt one (a flipped byte, a cut file) are not used, with
# a log line, and the request is evaluated whole with the same reply. On a
# recurrent model (Qwen3.5) the restored state gives a fresh server's logprobs.
. tests/lib.sh
. tests/lib_serve.sh
M=$TESTDATA/models
T=$M/tiny-spm-q8_0.gguf
K=$OUT/serve_kv_snap
R1='{"messages":[{"role":"user","content":"Hello there"}],"max_tokens":6,"temperature":0}'
# usage FILE: "PROMPT CACHED TEXT" of a chat reply
usage() {
    python3 -c 'import json,sys
o = json.load(open(sys.argv[1])); u = o["usage"]
print(u["prompt_tokens"], u.get("prompt_tokens_details", {}).get("cached_tokens"), json.dumps(o["choices"][0]["message"]["content"]))' "$1" 2>/dev/null
}
# ask LOG BODY OUT ARGS...: one server, one request, stopped
ask() {
    _log=$1 _body=$2 _out=$3
    shift 3
    if serve_start "$_log" -m "$T" --parallel 1 "$@"; then
        curl -s -o "$_out" "http://127.0.0.1:$SPORT/v1/chat/completions" -d "$_body"
        serve_stop
    else
        : >"$_out"
    fi
}
if need "$T" "serve --kv-dir (tiny-spm)"; then
    rm -rf "$K"
    name="serve --kv-dir: --help, README, man page and docs/serve.md name it"
    if "$BIN" serve --help | grep -q -- "--kv-dir DIR" && grep -q -- "--kv-dir" README.md &&
        grep -q -- "kv\\\\-dir" man/tokscope.1 && grep -q -- "--kv-dir" docs/serve.md; then ok "$name"
    else not_ok "$name"; fi

    ask "$OUT/serve_kv1.log" "$R1" "$OUT/serve_kv1.json" --kv-dir "$K"
    name="serve --kv-dir: the first run evaluates the prompt and writes the snapshot"
    set -- $(usage "$OUT/serve_kv1.json")
    if [ "${2:-}" = 0 ] && [ -s "$K/tiny-spm-q8_0.kv" ]; then ok "$name"
    else not_ok "$name" "usage: $*" "$(ls -l "$K" 2>&1)" "$(tail -n 3 "$OUT/serve_kv1.log")"; fi
    reply=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["message"]["content"])' \
        "$OUT/serve_kv1.json" 2>/dev/null)
    R2=$(python3 -c 'import json,sys
print(json.dumps({"messages": [{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": sys.argv[1]},
      {"role": "user", "content": "more"}], "max_tokens": 4, "temperature": 0}))' "$reply")
    cp "$K/tiny-spm-q8_0.kv" "$OUT/serve_kv.good"

    ask "$OUT/serve_kv_fresh.log" "$R2" "$OUT/serve_kv_fresh.json"
    want=$(usage "$OUT/serve_kv_fresh.json")
    ask "$OUT/serve_kv2.log" "$R2" "$OUT/serve_kv2.json" --kv-dir "$K"
    name="serve --kv-dir: a restarted server reuses the snapshot (cached tokens, fewer evaluated, the same reply)"
    got=$(usage "$OUT/serve_kv2.json")
    set -- $got
    held=$(sed -n 's/.*KV snapshot restored: \([0-9]*\) tokens.*/\1/p' "$OUT/serve_kv2.log")
    ev=$(sed -n 's/.*#1 chat: prompt \([0-9]*\) tokens (\([0-9]*\) evaluated).*/\1 \2/p' "$OUT/serve_kv2.log")
    if [ -n "$held" ] && [ "${2:-x}" = "$held" ] && [ "$held" -gt 0 ] && [ "$ev" = "$1 $(($1 - held))" ] &&
        [ "${got#* * }" = "${want#* * }" ] && grep -q "KV snapshot used: its $held tokens kept" "$OUT/serve_kv2.log"; then
        ok "$name"
    else
        not_ok "$name" "got: $got" "fresh: $want" "restored: $held, evaluated: $ev" "$(head -n 4 "$OUT/serve_kv2.log")"
    fi

    # a corrupt snapshot: one byte flipped in the middle, then a cut file
    for kind in flipped cut; do
        cp "$OUT/serve_kv.good" "$K/tiny-spm-q8_0.kv"
        size=$(wc -c <"$K/tiny-spm-q8_0.kv")
        if [ $kind = flipped ]; then
            python3 -c 'import sys
p, at = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read()); b[at] ^= 0x5a; open(p, "wb").write(b)' \
                "$K/tiny-spm-q8_0.kv" $((size / 2))
        else
            truncate -s $((size - 100)) "$K/tiny-spm-q8_0.kv"
        fi
        ask "$OUT/serve_kv_$kind.log" "$R2" "$OUT/serve_kv_$kind.json" --kv-dir "$K"
        name="serve --kv-dir: a $kind snapshot is ignored with a log line, the request evaluated whole, the same reply"
        got=$(usage "$OUT/serve_kv_$kind.json")
        set -- $got
        if grep -q "KV snapshot not used" "$OUT/serve_kv_$kind.log" && [ "${2:-x}" = 0 ] &&
            [ "${got#* * }" = "${want#* * }" ]; then ok "$name"
        else not_ok "$name" "got: $got" "fresh: $want" "$(head -n 3 "$OUT/serve_kv_$kind.log")"; fi
    done

    # a stale one: the snapshot of another model under this model's name
    S=$M/stories260K.gguf
    if [ -f "$S" ]; then
        rm -rf "$K.s"
        if serve_start "$OUT/serve_kv_st.log" -m "$S" --parallel 1 --kv-dir "$K.s"; then
            curl -s -o /dev/null "http://127.0.0.1:$SPORT/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":4}'
            serve_stop
        fi
        cp "$K.s/stories260K.kv" "$K/tiny-spm-q8_0.kv" 2>/dev/null
        ask "$OUT/serve_kv_stale.log" "$R2" "$OUT/serve_kv_stale.json" --kv-dir "$K"
        name="serve --kv-dir: another model's snapshot is not used (said in the log), the same reply"
        got=$(usage "$OUT/serve_kv_stale.json")
        set -- $got
        if grep -q "KV snapshot not used" "$OUT/serve_kv_stale.log" && [ "${2:-x}" = 0 ] &&
            [ "${got#* * }" = "${want#* * }" ]; then ok "$name"
        else not_ok "$name" "got: $got" "fresh: $want" "$(head -n 3 "$OUT/serve_kv_stale.log")"; fi
    fi

    # --parallel 2: one snapshot per slot (DIR/MODEL.S.kv), all restored at
    # start; a request extending either conversation takes its slot. The
    # replies after a restart (logprobs: logits and probabilities) equal those
    # of the server that wrote them, never stopped.
    P=$OUT/serve_kvp
    rm -rf "$P" "$P.copy" "$P.cut" "$P.cap"
    # RB's long reply is still running when R1 comes: the two take both slots
    RB='{"messages":[{"role":"user","content":"What is the capital of France and why"}],"max_tokens":1000,"ignore_eos":true,"temperature":0}'
    # more REPLY_FILE FIRST_CONTENT: the conversation extended, with logprobs
    more() {
        python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))["choices"][0]["message"]["content"]
print(json.dumps({"messages": [{"role": "user", "content": sys.argv[2]}, {"role": "assistant", "content": r},
      {"role": "user", "content": "more"}], "max_tokens": 4, "temperature": 0, "logprobs": True, "top_logprobs": 3}))' "$@"
    }
    # two REPLY_A REPLY_B: the two follow-ups, one after the other
    two() {
        curl -s -o "$1" "http://127.0.0.1:$SPORT/v1/chat/completions" -d "$A2"
        curl -s -o "$2" "http://127.0.0.1:$SPORT/v1/chat/completions" -d "$B2"
    }
    if serve_start "$OUT/serve_kvp1.log" -m "$T" --parallel 2 --kv-dir "$P"; then
        curl -s -o "$OUT/serve_kvp_b1.json" "http://127.0.0.1:$SPORT/v1/chat/completions" -d "$RB" &
        cpid=$!
        sleep 0.2
        curl -s -o "$OUT/serve_kvp_a1.json" "http://127.0.0.1:$SPORT/v1/chat/completions" -d "$R1"
        wait $cpid
        cp -r "$P" "$P.copy" # the files as the two replies left them
        A2=$(more "$OUT/serve_kvp_a1.json" "Hello there")
        B2=$(more "$OUT/serve_kvp_b1.json" "What is the capital of France and why")
        two "$OUT/serve_kvp_a2.json" "$OUT/serve_kvp_b2.json"
        serve_stop
    fi
    name="serve --parallel 2 --kv-dir: one snapshot per slot"
    if [ -s "$P.copy/tiny-spm-q8_0.0.kv" ] && [ -s "$P.copy/tiny-spm-q8_0.1.kv" ]; then ok "$name"
    else not_ok "$name" "$(ls -l "$P.copy" 2>&1)" "$(tail -n 3 "$OUT/serve_kvp1.log")"; fi
    cp -r "$P.copy" "$P.cut"
    cp -r "$P.copy" "$P.cap"
    if serve_start "$OUT/serve_kvp2.log" -m "$T" --parallel 2 --kv-dir "$P.copy"; then
        two "$OUT/serve_kvp_a2r.json" "$OUT/serve_kvp_b2r.json"
        serve_stop
    fi
    # "CACHED same|differ" of a reply against the never-stopped server's
    cmp_reply() {
        python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
ca, cb = (o["usage"]["prompt_tokens_details"]["cached_tokens"] for o in (a, b))
print(ca, "same" if ca == cb and a["choices"] == b["choices"] else "differ %s" % cb)' "$1" "$2" 2>&1
    }
    name="serve --parallel 2 --kv-dir: restarted, both slots restored, each follow-up cached and bit-equal"
    ra=$(cmp_reply "$OUT/serve_kvp_a2r.json" "$OUT/serve_kvp_a2.json")
    rb=$(cmp_reply "$OUT/serve_kvp_b2r.json" "$OUT/serve_kvp_b2.json")
    if [ "$(grep -c "KV snapshot restored into slot" "$OUT/serve_kvp2.log")" = 2 ] && [ "${ra#* }" = same ] &&
        [ "${rb#* }" = same ] && [ "${ra%% *}" -gt 10 ] && [ "${rb%% *}" -gt 10 ] 2>/dev/null; then ok "$name"
    else not_ok "$name" "a: $ra" "b: $rb" "$(head -n 3 "$OUT/serve_kvp2.log")"; fi

    # a cut slot file (slot 0's: RB's, which took the first of two empty
    # slots): said, that slot starts empty, the other one is used (A2 extends
    # slot 1's conversation by over 10 %: its cached tokens as before). B2
    # re-tokenizes RB's reply into other tokens after 34 of ~1030 (under
    # 10 %): it takes the empty slot and is evaluated whole, the same reply.
    f=$P.cut/tiny-spm-q8_0.0.kv
    truncate -s $(($(wc -c <"$f") - 50)) "$f"
    if serve_start "$OUT/serve_kvp3.log" -m "$T" --parallel 2 --kv-dir "$P.cut"; then
        curl -s -o "$OUT/serve_kvp_a2c.json" "http://127.0.0.1:$SPORT/v1/chat/completions" -d "$A2"
        curl -s -o "$OUT/serve_kvp_b2c.json" "http://127.0.0.1:$SPORT/v1/chat/completions" -d "$B2"
        serve_stop
    fi
    name="serve --parallel 2 --kv-dir: a truncated slot snapshot is ignored with a message, the replies the same"
    ra=$(cmp_reply "$OUT/serve_kvp_a2c.json" "$OUT/serve_kvp_a2.json")
    rb=$(usage "$OUT/serve_kvp_b2c.json")
    want=$(usage "$OUT/serve_kvp_b2.json")
    if grep -q "KV snapshot not used (slot 0 starts empty): .*truncated" "$OUT/serve_kvp3.log" &&
        grep -q "KV snapshot restored into slot 1" "$OUT/serve_kvp3.log" && [ "${ra#* }" = same ] &&
        [ "${ra%% *}" -gt 10 ] 2>/dev/null && [ -n "$rb" ] && [ "${rb#* * }" = "${want#* * }" ]; then ok "$name"
    else not_ok "$name" "a: $ra" "b: $rb / $want" "$(head -n 3 "$OUT/serve_kvp3.log")"; fi

    # the cap covers every slot's file: an old 1.5 MiB one goes first (slot
    # 0's takes about 1.1 MiB, slot 1's 50 KB)
    head -c 1572864 /dev/zero >"$P.cap/tiny-spm-q8_0.7.kv"
    touch -d '2020-01-01' "$P.cap/tiny-spm-q8_0.7.kv"
    if serve_start "$OUT/serve_kvp4.log" -m "$T" --parallel 2 --kv-dir "$P.cap" --kv-max-mb 2; then
        curl -s -o /dev/null "http://127.0.0.1:$SPORT/v1/chat/completions" -d "$A2"
        serve_stop
    fi
    name="serve --parallel 2 --kv-max-mb: the slots' files are capped together, the oldest removed first"
    if [ ! -e "$P.cap/tiny-spm-q8_0.7.kv" ] && [ -s "$P.cap/tiny-spm-q8_0.0.kv" ] && [ -s "$P.cap/tiny-spm-q8_0.1.kv" ] &&
        grep -q "older snapshots removed" "$OUT/serve_kvp4.log"; then ok "$name"
    else not_ok "$name" "$(ls -l "$P.cap" 2>&1)" "$(tail -n 3 "$OUT/serve_kvp4.log")"; fi
fi

# a recurrent model (Qwen3.5: the DeltaNet state and its checkpoints in the
# snapshot): a completion that extends the one before, restarted; the
# logprobs entries (logits, probabilities) equal a fresh server's
Q=$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf
if need "$Q" "serve --kv-dir on a recurrent model (qwen35-mini)"; then
    rm -rf "$K.q"
    P1='{"prompt":"Once upon a time","max_tokens":6,"temperature":0}'
    if serve_start "$OUT/serve_kvq1.log" -m "$Q" --parallel 1 --kv-dir "$K.q"; then
        curl -s -o "$OUT/serve_kvq1.json" "http://127.0.0.1:$SPORT/v1/completions" -d "$P1"
        serve_stop
    fi
    P2=$(python3 -c 'import json,sys
o = json.load(open(sys.argv[1]))
print(json.dumps({"prompt": "Once upon a time" + o["choices"][0]["text"] + " and then", "max_tokens": 4,
                  "temperature": 0, "logprobs": 2}))' "$OUT/serve_kvq1.json" 2>/dev/null)
    for run in kept fresh; do
        a=""
        [ $run = kept ] && a="--kv-dir $K.q"
        # shellcheck disable=SC2086
        if serve_start "$OUT/serve_kvq_$run.log" -m "$Q" --parallel 1 $a; then
            curl -s -o "$OUT/serve_kvq_$run.json" "http://127.0.0.1:$SPORT/v1/completions" -d "$P2"
            serve_stop
        fi
    done
    name="serve --kv-dir on Qwen3.5: restored, tokens kept, the same logprobs entries as a fresh server"
    res=$(python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
ca = a["usage"]["prompt_tokens_details"]["cached_tokens"]
same = a["choices"][0]["logprobs"]["content"] == b["choices"][0]["logprobs"]["content"]
print(ca, "same" if same else "differ")' "$OUT/serve_kvq_kept.json" "$OUT/serve_kvq_fresh.json" 2>&1)
    if grep -q "KV snapshot restored" "$OUT/serve_kvq_kept.log" && [ "${res#* }" = same ] && [ "${res%% *}" -gt 0 ] 2>/dev/null
    then ok "$name"
    else not_ok "$name" "$res" "$(head -n 3 "$OUT/serve_kvq_kept.log")"; fi
fi
