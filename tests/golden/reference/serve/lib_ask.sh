# Shared by make_bias.sh, make_samplers.sh and make_dry.sh (sourced after
# they set R, M, D, W and port): ask MODEL PATH REQ starts llama-server on
# MODEL (-c CTX, default 512), posts REQ.req to PATH, writes the reply to
# REQ.json, stops it.
ask() {
    "$R/llama-server" -m "$M/$1" -c "${CTX:-512}" -t 2 -np 1 --port $port >"$W/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do
        curl -s "http://127.0.0.1:$port/health" 2>/dev/null | grep -q ok && break
        sleep 1
    done
    curl -s -o "$D/$3.json" "http://127.0.0.1:$port$2" -d @"$D/$3.req"
    kill $pid
    wait $pid 2>/dev/null
    port=$((port + 1))
}
