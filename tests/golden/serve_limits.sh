#!/bin/sh
# tokscope serve under abuse and at the edges of HTTP (issue 35, items 11, 12,
# 14, 15): a 7 MB prompt refused at once with bounded memory (by its length, and
# by its count under -c 65536), a flood of idle
# connections, the request's time in `created`, GET /v1/models/{id}, the role
# chunk of a stream, duplicate Content-Length, a missing Host, a half-close.
# The checks themselves: tests/tools/serve_limits.py (python3 stdlib).
. tests/lib.sh
. tests/lib_serve.sh
S=$TESTDATA/models/stories260K.gguf
LIM="python3 tests/tools/serve_limits.py"
if need "$S" "serve limits on stories260K"; then
    if serve_start "$OUT/serve_limits.log" -m "$S"; then
        $LIM oversize "$SPORT" "$SPID"
        $LIM protocol "$SPORT" stories260K.gguf
        serve_stop
        name="serve limits: the server stopped cleanly after the abuse"
        if [ "$SRC" -eq 0 ]; then ok "$name"; else not_ok "$name" "exit $SRC" "$(tail -n 3 "$OUT/serve_limits.log")"; fi
    else
        not_ok "serve limits: the server starts" "$(tail -n 5 "$OUT/serve_limits.log")"
    fi
    Q=$TESTDATA/models/qwen3-mini-q8_0.gguf
    if [ -f "$Q" ]; then
        if serve_start "$OUT/serve_counted.log" -m "$Q" -c 65536; then
            $LIM counted "$SPORT" "$SPID" "$OUT/serve_counted.log"
            serve_stop
        else
            not_ok "serve -c 65536: the server starts" "$(tail -n 5 "$OUT/serve_counted.log")"
        fi
    fi
    printf 'sk-flood-%s\n' "$$" >"$OUT/serve_flood.key"
    if serve_start "$OUT/serve_flood.log" -m "$S" --api-key-file "$OUT/serve_flood.key"; then
        $LIM flood "$SPORT" "sk-flood-$$"
        serve_stop
        name="serve flood: the server stopped cleanly"
        if [ "$SRC" -eq 0 ]; then ok "$name"; else not_ok "$name" "exit $SRC" "$(tail -n 3 "$OUT/serve_flood.log")"; fi
    else
        not_ok "serve flood: the server starts" "$(tail -n 5 "$OUT/serve_flood.log")"
    fi
fi
