#!/bin/sh
# `tokscope bench` options (numbers are not asserted: `make bench` measures):
# comma lists run every combination, -d fills the cache first, -o jsonl
# carries llama-bench's field names, bad values are usage errors.
. tests/lib.sh
M=$TESTDATA/models/stories260K.gguf
need "$M" "bench" || exit 0
"$BIN" bench -m "$M" -p 8,16 -n 4 -d 0,20 -t 1,2 -r 1 -o jsonl >"$OUT/bench.jsonl" 2>"$OUT/bench.err"
rc=$?
if [ $rc -eq 0 ] && python3 -c "
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
want = {(p, g, d, t) for t in (1, 2) for d in (0, 20) for p, g in ((8, 0), (16, 0), (0, 4))}
got = {(d['n_prompt'], d['n_gen'], d['n_depth'], d['n_threads']) for d in L}
ok = got == want and len(L) == 12 and all(d['avg_ts'] > 0 and d['type_k'] == 'f16' and d['type_v'] == 'f16'
     and len(d['samples_ts']) == 1 and d['peak_rss_bytes'] > 0 for d in L)
sys.exit(0 if ok else 1)" "$OUT/bench.jsonl"; then ok "bench: lists, depth and threads run every combination (jsonl)"
else not_ok "bench: lists, depth and threads run every combination (jsonl)" "exit $rc" "$(head -c 300 "$OUT/bench.err")"; fi
"$BIN" bench -m "$M" -p 8 -n 4 -d 30 -r 1 >"$OUT/bench.txt" 2>&1
if [ $? -eq 0 ] && grep -q 'pp8 @ d30 .*tok/s .*peak RSS [0-9]* MiB' "$OUT/bench.txt" && grep -q 'tg4 @ d30' "$OUT/bench.txt"
then ok "bench: text lines name the depth and the peak RSS"
else not_ok "bench: text lines name the depth and the peak RSS" "$(head -n 3 "$OUT/bench.txt")"; fi
"$BIN" bench -m "$TESTDATA/models/tiny-spm-q8_0.gguf" -p 8 -n 4 -r 1 -ctk q8_0 -ctv q4_0 -o jsonl >"$OUT/bench.jsonl" 2>&1
if [ $? -eq 0 ] && grep -q '"type_k": "q8_0", "type_v": "q4_0"' "$OUT/bench.jsonl"; then ok "bench -ctk q8_0 -ctv q4_0"
else not_ok "bench -ctk q8_0 -ctv q4_0" "$(head -n 2 "$OUT/bench.jsonl")"; fi
# what a generated token reads: tiny-spm's 4 layers of 2 KV heads of 32 hold
# 4 * 2 * 64 K values and as many V per position (Q8_0 K: 2 blocks of 34
# bytes per row, Q4_0 V: 2 of 18); every weight but the embeddings (not tied)
if python3 -c "
import json, os, sys
d = json.loads(open(sys.argv[1]).readline())
w = os.path.getsize(sys.argv[2])
sys.exit(0 if d['kv_bytes_per_pos'] == 4 * (68 + 36) and 0.5 * w < d['weight_bytes'] < w else 1)" \
    "$OUT/bench.jsonl" "$TESTDATA/models/tiny-spm-q8_0.gguf"; then ok "bench: weight_bytes and kv_bytes_per_pos"
else not_ok "bench: weight_bytes and kv_bytes_per_pos" "$(head -n 1 "$OUT/bench.jsonl")"; fi
# weight_bytes split by type: iq-mini-tq1_0 reads its 14 TQ1_0 matrices, the
# Q6_K output and the F32 norms (info's tensor table: 317952, 107520, 5120
# bytes), not the Q4_K token embeddings (one row each token); the text
# output's first line gives the same split, largest first
IQ1=$TESTDATA/iq/models/iq-mini-tq1_0.gguf
if need "$IQ1" "bench: weight_bytes_by_type"; then
    "$BIN" bench -m "$IQ1" -p 0 -n 2 -r 1 -o jsonl >"$OUT/bench.jsonl" 2>&1
    if [ $? -eq 0 ] && python3 -c "
import json, sys
d = json.loads(open(sys.argv[1]).readline())
t = d['weight_bytes_by_type']
sys.exit(0 if t == {'F32': 5120, 'Q6_K': 107520, 'TQ1_0': 317952} and sum(t.values()) == d['weight_bytes'] else 1)" \
        "$OUT/bench.jsonl"; then ok "bench: weight_bytes_by_type"
    else not_ok "bench: weight_bytes_by_type" "$(head -c 600 "$OUT/bench.jsonl")"; fi
    "$BIN" bench -m "$IQ1" -p 0 -n 2 -r 1 >"$OUT/bench.txt" 2>&1
    if [ $? -eq 0 ] && head -n 1 "$OUT/bench.txt" | grep -q '^iq-mini-tq1_0.gguf: a generated token reads 0\.41 MiB of weights: TQ1_0 0\.30 MiB (73\.8%), Q6_K 0\.10 MiB (25\.0%), F32 0\.00 MiB (1\.2%)$'
    then ok "bench: text gives the per-type split first"
    else not_ok "bench: text gives the per-type split first" "$(head -n 2 "$OUT/bench.txt")"; fi
fi
# --blas: a list of modes, each test with each; OpenBLAS runs where the mode
# says (on: every F16 weight of a batch, i.e. all but the last layer's FFN
# and the head, which run for the one row with logits; auto: not below its
# threshold; off: never), and the text marks those tests with '*'
"$BIN" bench -m "$TESTDATA/models/tiny-spm-f16.gguf" -p 8 -n 2 -r 1 --blas off,on,auto -o jsonl >"$OUT/bench.jsonl" 2>&1
if [ $? -eq 0 ] && python3 -c "
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
got = {(d['blas'], d['n_prompt'], d['n_gen']): d['blas_matmuls'] for d in L}
want = {('off', 8, 0): 0, ('off', 0, 2): 0, ('on', 8, 0): 25, ('on', 0, 2): 0, ('auto', 8, 0): 0, ('auto', 0, 2): 0}
sys.exit(0 if got == want and len(L) == 6 else 1)" "$OUT/bench.jsonl"; then ok "bench --blas off,on,auto: OpenBLAS products where each mode says"
else not_ok "bench --blas off,on,auto: OpenBLAS products where each mode says" "$(head -n 6 "$OUT/bench.jsonl")"; fi
"$BIN" bench -m "$TESTDATA/models/tiny-spm-f16.gguf" -p 8 -n 0 -r 1 --blas on,off >"$OUT/bench.txt" 2>&1
if [ $? -eq 0 ] && grep -q 'pp8 .* blas on\* ' "$OUT/bench.txt" && grep -q 'pp8 .* blas off ' "$OUT/bench.txt"
then ok "bench: text lines mark the tests OpenBLAS ran in"
else not_ok "bench: text lines mark the tests OpenBLAS ran in" "$(cat "$OUT/bench.txt")"; fi
for bad in "-p x" "-d 1,,2" "-t 0" "-ctk q2_k" "-o csv" "--blas maybe" "--blas on,,off"; do
    # shellcheck disable=SC2086
    "$BIN" bench -m "$M" $bad >"$OUT/bench.out" 2>&1
    rc=$?
    if [ $rc -eq 2 ]; then ok "bench $bad: usage error"; else not_ok "bench $bad: usage error" "exit $rc"; fi
done
# a value out of range names the option and its range, not only the usage
for bad in "-r 0" "-r 101" "-b -1"; do
    # shellcheck disable=SC2086
    "$BIN" bench -m "$M" $bad >"$OUT/bench.out" 2>&1
    rc=$?
    opt=${bad%% *}
    if [ $rc -eq 2 ] && grep -q -- "^tokscope bench: invalid value .* for $opt: want an integer" "$OUT/bench.out"; then ok "bench $bad: says what is wrong"
    else not_ok "bench $bad: says what is wrong" "exit $rc" "$(head -n 2 "$OUT/bench.out")"; fi
done
