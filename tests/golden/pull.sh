#!/bin/sh
# `tokscope pull` against a hub look-alike on loopback (tests/tools/hf_mock.py;
# never the internet): the REPO[:QUANT] syntax picks the right files (whole
# word quant, split sets, mmproj left out), the sha256 is checked before the
# final name, and every failure (404, 401, a cut connection, a wrong
# checksum, a full disk, a server that ignores Range) gives a clear message
# and never leaves a corrupt file under the final name; the partial file
# stays and the next run resumes it.
. tests/lib.sh
SRC=$TESTDATA/models/stories260K-f16.gguf
need "$SRC" "pull suite" || exit 0
W=$(mktemp -d "$OUT/pull.XXXXXX") || exit 1
R=$W/hub
mk() { mkdir -p "$(dirname "$R/$1")" && cp "$SRC" "$R/$1"; }
mk unsloth/Tiny-GGUF/tiny-Q4_K_M.gguf
mk unsloth/Tiny-GGUF/tiny-Q8_0.gguf
mk unsloth/Tiny-GGUF/mmproj-tiny-Q8_0.gguf
mk split/Big-GGUF/Q4_K_M/big-Q4_K_M-00001-of-00002.gguf
head -c 1000 "$SRC" >"$R/split/Big-GGUF/Q4_K_M/big-Q4_K_M-00002-of-00002.gguf"
mk gated/Tiny-GGUF/tiny-Q4_K_M.gguf
mk cut/Tiny-GGUF/tiny-Q4_K_M.gguf
mk badsum/Tiny-GGUF/tiny-Q4_K_M.gguf
mk norange/Tiny-GGUF/tiny-Q4_K_M.gguf
mk full/Tiny-GGUF/tiny-Q4_K_M.gguf

python3 tests/tools/hf_mock.py "$R" "$W/port" 2>"$W/mock.log" &
MOCK=$!
trap 'kill $MOCK 2>/dev/null' EXIT
i=0
while [ ! -s "$W/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
export HF_ENDPOINT="http://127.0.0.1:$(cat "$W/port")"
export TOKSCOPE_PULL_STALL=10
unset HF_TOKEN

# pull NAME EXPECTED_RC SPEC ARGS...: runs it, output in $W/out
pull() {
    name=$1 want=$2
    shift 2
    "$BIN" pull "$@" >"$W/out" 2>&1
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        not_ok "$name" "exit $rc, wanted $want" "$(tail -n 4 "$W/out")"
        return 1
    fi
}
same() { cmp -s "$SRC" "$1"; }
has() { grep -q -- "$1" "$W/out"; }

D=$W/d1
name="pull REPO:QUANT fetches that file, sha256 checked, nothing else"
pull "$name" 0 unsloth/Tiny-GGUF:Q8_0 -o "$D" && {
    if same "$D/tiny-Q8_0.gguf" && has "sha256 ok" && [ "$(ls "$D")" = tiny-Q8_0.gguf ]; then ok "$name"
    else not_ok "$name" "$(ls "$D")" "$(tail -n 3 "$W/out")"; fi; }

name="pull REPO without a quant picks Q4_K_M (as llama-cli -hf), never mmproj; HOME/models by default"
HOME=$W/home pull "$name" 0 unsloth/Tiny-GGUF && {
    if same "$W/home/models/tiny-Q4_K_M.gguf" && [ "$(ls "$W/home/models")" = tiny-Q4_K_M.gguf ]; then ok "$name"
    else not_ok "$name" "$(ls "$W/home/models")"; fi; }

name="the pulled file opens (tokscope info)"
check "$name" "$BIN" info "$W/home/models/tiny-Q4_K_M.gguf"

name="a second pull of the same file says it is there and downloads nothing"
n0=$(grep -c 'GET /cdn/' "$W/mock.log")
HOME=$W/home pull "$name" 0 unsloth/Tiny-GGUF && {
    if has "already there" && [ "$(grep -c 'GET /cdn/' "$W/mock.log")" -eq "$n0" ]; then ok "$name"
    else not_ok "$name" "$(tail -n 2 "$W/out")"; fi; }

name="a quant is a whole word: Q4_K does not pick Q4_K_M, and the message lists the files"
pull "$name" 1 unsloth/Tiny-GGUF:Q4_K -o "$W/d2" && {
    if has "no .gguf file matches 'Q4_K'" && has "tiny-Q4_K_M.gguf" && [ ! -e "$W/d2/tiny-Q4_K_M.gguf" ]; then ok "$name"
    else not_ok "$name" "$(cat "$W/out")"; fi; }

name="REPO:FILE.gguf picks that file"
pull "$name" 0 unsloth/Tiny-GGUF:tiny-Q8_0.gguf -o "$W/d3" && {
    if same "$W/d3/tiny-Q8_0.gguf"; then ok "$name"; else not_ok "$name" "$(ls "$W/d3")"; fi; }

name="a split model comes whole (every part, from a subfolder), with a word on joining it"
pull "$name" 0 split/Big-GGUF:Q4_K_M -o "$W/d4" && {
    if same "$W/d4/big-Q4_K_M-00001-of-00002.gguf" && [ "$(wc -c <"$W/d4/big-Q4_K_M-00002-of-00002.gguf")" -eq 1000 ] &&
        has "split model of 2 parts"; then ok "$name"
    else not_ok "$name" "$(ls "$W/d4")" "$(tail -n 2 "$W/out")"; fi; }

name="404: a missing repository is named, exit 1"
pull "$name" 1 nobody/Nothing-GGUF -o "$W/d5" && {
    if has "HTTP 404" && has "not found"; then ok "$name"; else not_ok "$name" "$(cat "$W/out")"; fi; }

name="401: a gated repository says to set HF_TOKEN"
pull "$name" 1 gated/Tiny-GGUF -o "$W/d6" && {
    if has "HTTP 401" && has "HF_TOKEN"; then ok "$name"; else not_ok "$name" "$(cat "$W/out")"; fi; }

name="HF_TOKEN opens the gated repository (sent as a bearer token)"
HF_TOKEN=secret-token pull "$name" 0 gated/Tiny-GGUF -o "$W/d6" && {
    if same "$W/d6/tiny-Q4_K_M.gguf"; then ok "$name"; else not_ok "$name" "$(cat "$W/out")"; fi; }

D=$W/d7
name="a cut connection: clear message, the partial file kept, no file under the final name"
pull "$name" 1 cut/Tiny-GGUF -o "$D" && {
    if has "stopped after" && has "resume" && [ -s "$D/tiny-Q4_K_M.gguf.part" ] && [ ! -e "$D/tiny-Q4_K_M.gguf" ]; then
        ok "$name"
    else not_ok "$name" "$(cat "$W/out")" "$(ls -la "$D")"; fi; }

name="the same command again resumes with a Range request and ends with the right file"
pull "$name" 0 cut/Tiny-GGUF -o "$D" && {
    if same "$D/tiny-Q4_K_M.gguf" && has "resuming" && grep -q 'GET /cdn/cut' "$W/mock.log" && [ ! -e "$D/tiny-Q4_K_M.gguf.part" ]; then
        ok "$name"
    else not_ok "$name" "$(cat "$W/out")"; fi; }

D=$W/d8
name="a wrong checksum: said with both sums, the corrupt download deleted, nothing under the final name"
pull "$name" 1 badsum/Tiny-GGUF -o "$D" && {
    if has "but the hub publishes 0000" && has "deleted" && [ -z "$(ls "$D")" ]; then ok "$name"
    else not_ok "$name" "$(cat "$W/out")" "$(ls "$D")"; fi; }

D=$W/d9
name="a full disk (file size limit): the write error named, the partial file kept, nothing under the final name"
( ulimit -f 200 && trap '' XFSZ && exec "$BIN" pull full/Tiny-GGUF -o "$D" ) >"$W/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "File too large (disk full?)" && [ -s "$D/tiny-Q4_K_M.gguf.part" ] && [ ! -e "$D/tiny-Q4_K_M.gguf" ]; then
    ok "$name"
else not_ok "$name" "exit $rc" "$(cat "$W/out")" "$(ls -la "$D" 2>&1)"; fi
name="... and once there is room the same command resumes it"
pull "$name" 0 full/Tiny-GGUF -o "$D" && {
    if same "$D/tiny-Q4_K_M.gguf" && has "resuming"; then ok "$name"; else not_ok "$name" "$(cat "$W/out")"; fi; }

D=$W/d10
mkdir -p "$D" && head -c 5000 /dev/urandom >"$D/tiny-Q4_K_M.gguf.part"
name="a server that ignores Range: the download starts over instead of appending to a wrong prefix"
pull "$name" 0 norange/Tiny-GGUF -o "$D" && {
    if same "$D/tiny-Q4_K_M.gguf" && has "sha256 ok"; then ok "$name"; else not_ok "$name" "$(cat "$W/out")"; fi; }

name="a URL: fetched, checked against the X-Linked-ETag it sends"
pull "$name" 0 "$HF_ENDPOINT/unsloth/Tiny-GGUF/resolve/main/tiny-Q8_0.gguf" -o "$W/d11" && {
    if same "$W/d11/tiny-Q8_0.gguf" && has "sha256 ok"; then ok "$name"; else not_ok "$name" "$(cat "$W/out")"; fi; }

name="a spec that is not OWNER/NAME is a usage error (exit 2) with an example"
pull "$name" 2 notarepo -o "$W/d12" && {
    if has "OWNER/NAME" && [ ! -e "$W/d12" ]; then ok "$name"; else not_ok "$name" "$(cat "$W/out")"; fi; }

name="a server that is not there: the connection error named, exit 1"
HF_ENDPOINT=http://127.0.0.1:1 pull "$name" 1 unsloth/Tiny-GGUF -o "$W/d13" && {
    if grep -qi "connect" "$W/out"; then ok "$name"; else not_ok "$name" "$(cat "$W/out")"; fi; }
kill $MOCK 2>/dev/null
[ -n "$KEEP" ] || rm -rf "$W"
