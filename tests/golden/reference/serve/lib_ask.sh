# Shared by the scripts of this folder (sourced after they set R, M, D, W
# and port). serve_start FILE: llama-server on FILE, waited for until
# /health answers (-c CTX, default 512); serve_stop: stops it, the next one
# takes the next port.
serve_start() {
    "$R/llama-server" -m "$1" -c "${CTX:-512}" -t 2 -np 1 --port $port >"$W/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do
        curl -s "http://127.0.0.1:$port/health" 2>/dev/null | grep -q ok && break
        sleep 1
    done
}
serve_stop() {
    kill $pid
    wait $pid 2>/dev/null
    port=$((port + 1))
}
# ask MODEL PATH REQ: posts REQ.req to PATH of a server on MODEL (a name in
# ../shared's models, or a path), the reply to REQ.json
ask() {
    case $1 in */*) serve_start "$1" ;; *) serve_start "$M/$1" ;; esac
    curl -s -o "$D/$3.json" "http://127.0.0.1:$port$2" -d @"$D/$3.req"
    serve_stop
}
