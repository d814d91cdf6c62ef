#!/bin/sh
# serve's cache_prompt (llama-server's field, default true). A request that
# shares a prefix with the one before it reuses that prefix from the cache
# and evaluates only the rest, in a second batch, which rounds differently
# from the whole prompt in one: its logprobs then depend on what the server
# ran before. cache_prompt false asks for the bits of a fresh start; it was
# once ignored (parsed as an unknown field), so the reply kept the reused
# prefix's bits and said cached_tokens > 0. Checked on --parallel 1 (one
# sequence, engine_gen.c) and 4 (the slots, engine_slots.c), against a
# fresh server's reply to the same request; a non-boolean value is a 400.
. tests/lib.sh
. tests/lib_serve.sh
S=$TESTDATA/models/stories260K.gguf
# 137 tokens: stories260K's prompt, repeated; B shares A's first sentence
A='Once upon a time there was a little girl named Lily. She liked to play in the park with her dog Max.'
B="$A One day Max ran away and Lily was very sad. She looked everywhere for him.\nThen she heard a bark. It was Max! He was hiding under a big tree.\n$A One day Max"

# ask PORT PROMPT [EXTRA]: the reply's first logprobs entry and cached_tokens, one line
ask() {
    python3 - "$1" "$2" "${3:-}" <<'EOF'
import json, sys, urllib.request
port, prompt, extra = sys.argv[1], sys.argv[2].replace('\\n', '\n'), sys.argv[3]
body = {"prompt": prompt, "max_tokens": 2, "temperature": 0, "logprobs": 3}
if extra:
    body.update(json.loads(extra))
req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % port, json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
try:
    d = json.load(urllib.request.urlopen(req, timeout=60))
except urllib.error.HTTPError as e:
    print("HTTP %d %s" % (e.code, json.load(e)["error"].get("param")))
    sys.exit(0)
c = d["choices"][0]["logprobs"]["content"]
print(json.dumps([[e["token"], e["logprob"], [[t["token"], t["logprob"]] for t in e["top_logprobs"]]] for e in c]),
      "cached", d["usage"].get("prompt_tokens_details", {}).get("cached_tokens"))
EOF
}

if need "$S" "serve cache_prompt on stories260K"; then
    for np in 1 4; do
        if serve_start "$OUT/serve_cache_fresh$np.log" -m "$S" -c 512 --parallel $np; then
            fresh=$(ask "$SPORT" "$B")
            serve_stop
        else
            fresh="server did not start: $(tail -n 3 "$OUT/serve_cache_fresh$np.log")"
        fi
        if serve_start "$OUT/serve_cache$np.log" -m "$S" -c 512 --parallel $np; then
            ask "$SPORT" "$A" >/dev/null
            reused=$(ask "$SPORT" "$B")
            ask "$SPORT" "$A" >/dev/null
            nocache=$(ask "$SPORT" "$B" '{"cache_prompt": false}')
            bad=$(ask "$SPORT" "$B" '{"cache_prompt": "no"}')
            serve_stop
        else
            nocache="server did not start: $(tail -n 3 "$OUT/serve_cache$np.log")"
        fi
        name="serve --parallel $np: cache_prompt false gives a fresh server's logprobs, nothing cached"
        if [ "${fresh% cached *}" = "${nocache% cached *}" ] && [ "${nocache##* cached }" = 0 ] &&
            [ "${fresh##* cached }" = 0 ]; then ok "$name"
        else not_ok "$name" "fresh:    $fresh" "no cache: $nocache"; fi
        # the default reuses the prefix (so the check above can fail): A's tokens are cached
        name="serve --parallel $np: by default a shared prefix is reused (cached_tokens > 0)"
        case "${reused##* cached }" in
        0 | "" | *[!0-9]*) not_ok "$name" "$reused" ;;
        *) ok "$name" ;;
        esac
        name="serve --parallel $np: a non-boolean cache_prompt is a 400 naming it"
        if [ "$bad" = "HTTP 400 cache_prompt" ]; then ok "$name"; else not_ok "$name" "$bad"; fi
    done
fi
