# Starting and stopping `tokscope serve` in the shell suites (after tests/lib.sh).

# serve_start LOG ARGS...: starts the server on a free loopback port (one
# thread: the machine is shared), waits for its "listening" line; sets SPID
# and SPORT. False when it exits or does not listen within 60 s.
serve_start() {
    _log=$1
    shift
    "$BIN" serve --port 0 -t 1 "$@" 2>"$_log" &
    SPID=$!
    SPORT=
    _i=0
    while [ $_i -lt 600 ]; do
        SPORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$_log")
        [ -n "$SPORT" ] && return 0
        kill -0 "$SPID" 2>/dev/null || return 1
        sleep 0.1
        _i=$((_i + 1))
    done
    kill "$SPID" 2>/dev/null
    return 1
}

# serve_stop: SIGTERM, then its exit status in SRC (124 when it hung for 30 s).
serve_stop() {
    kill -TERM "$SPID" 2>/dev/null
    _i=0
    while kill -0 "$SPID" 2>/dev/null && [ $_i -lt 300 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    if kill -0 "$SPID" 2>/dev/null; then
        kill -KILL "$SPID" 2>/dev/null
        wait "$SPID" 2>/dev/null
        SRC=124
        return
    fi
    wait "$SPID"
    SRC=$?
}
