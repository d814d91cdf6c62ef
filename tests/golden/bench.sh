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
# peak RSS: the packed weights (forward_packed.h) replace the file's pages
# slice by slice as they are packed, so a run holds the model about once
# (it held the packed weights twice: 311 MiB for a 166 MiB file). The file
# is read into the page cache first as a reader would (cat: large folios,
# up to 2 MB), where reading a norm from the file mapped its released
# neighbours back in: 203 MiB for this 130 MiB file, 157 since the small
# tensors leave the file too (forward.c's build_packed)
GEN=${BUILD:-build}/tools/gguf_random
name="bench: the peak RSS holds the packed model once (at most the file + 5 % + 32 MiB)"
if [ -x "$GEN" ] && "$GEN" --like "$TESTDATA/models/tiny-spm-q4_0.gguf" --type Q4_0 --dim 1024 --layers 16 --heads 16 \
    --kv-heads 2 --ffn 2816 "$OUT/rss.gguf" >/dev/null 2>&1; then
    python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" \
        "$OUT/rss.gguf" && cat "$OUT/rss.gguf" >/dev/null
    "$BIN" bench -m "$OUT/rss.gguf" -p 8 -n 2 -r 1 -o jsonl >"$OUT/rss.jsonl" 2>&1
    if [ $? -eq 0 ] && python3 -c "
import json, os, sys
peak = max(json.loads(l)['peak_rss_bytes'] for l in open(sys.argv[1]))
sys.exit(0 if peak <= os.path.getsize(sys.argv[2]) * 1.05 + (32 << 20) else 1)" "$OUT/rss.jsonl" "$OUT/rss.gguf"
    then ok "$name"
    else not_ok "$name" "$(head -c 300 "$OUT/rss.jsonl")"; fi
    rm -f "$OUT/rss.gguf"
else
    not_ok "$name" "gguf_random could not write the model"
fi
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
# --spec (issue 37): a tg test generates greedily as generate does, the
# drafts verified by the target; a pp test is unchanged. A model drafting
# for itself agrees on every draft, so the counts are worked out by hand:
# tg32 with 3 drafts is 8 verifications of 4 tokens (24 drafts); with 5, 5
# of 6 and one of 2 where the 32 end (26); at a depth as at 0; qwen35-mini's
# DeltaNet state as stories260K's cache. ngram on the fixed pseudo-random
# tokens drafts only where the reply repeats: the fields are there and
# n_accepted <= n_drafted.
spec_jsonl() { # NAME MODEL WANT(python dict n_gen,n_depth -> (drafted, accepted) or None) ARGS...
    name=$1 model=$2 want=$3
    shift 3
    "$BIN" bench -m "$model" -r 2 -t 2 -o jsonl "$@" >"$OUT/spec.jsonl" 2>"$OUT/spec.err"
    rc=$?
    if [ $rc -eq 0 ] && python3 -c "
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
want = $want
ok = len(L) > 0
for d in L:
    if d['n_prompt'] > 0:
        ok = ok and 'n_drafted' not in d and 'spec' not in d  # pp: unchanged
        continue
    ok = ok and d['spec'] in ('ngram', 'draft') and d['avg_ts'] > 0 and 0 <= d['n_accepted'] <= d['n_drafted']
    if want is not None:
        ok = ok and (d['n_drafted'], d['n_accepted']) == want[(d['n_gen'], d['n_depth'])]
sys.exit(0 if ok else 1)" "$OUT/spec.jsonl"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(head -c 600 "$OUT/spec.jsonl")" "$(head -c 300 "$OUT/spec.err")"; fi
}
spec_jsonl "bench --spec draft, the model drafting for itself: 24 of 24 drafts in tg32 (jsonl)" "$M" \
    "{(32, 0): (24, 24), (32, 20): (24, 24)}" -p 8 -n 32 -d 0,20 --spec draft -md "$M"
spec_jsonl "bench --spec draft --draft-max 5: the drafts cut where the 32 tokens end (26 of 26)" "$M" \
    "{(32, 0): (26, 26)}" -p 0 -n 32 --spec draft --draft-max 5 -md "$M"
spec_jsonl "bench --spec ngram: n_drafted, n_accepted (jsonl)" "$M" None -p 8 -n 64,256 --spec ngram --spec-ngram-n 2
Q=$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf
if need "$Q" "bench --spec on a recurrent model"; then
    spec_jsonl "bench --spec draft on qwen35-mini (a recurrent state), at depths 0 and 20" "$Q" \
        "{(32, 0): (24, 24), (32, 20): (24, 24)}" -p 0 -n 32 -d 0,20 --spec draft -md "$Q"
    spec_jsonl "bench --spec ngram on qwen35-mini" "$Q" None -p 0 -n 128 --spec ngram --spec-ngram-n 1
fi
"$BIN" bench -m "$M" -p 8 -n 32 -r 1 -t 1 --spec draft -md "$M" >"$OUT/bench.txt" 2>&1
if [ $? -eq 0 ] && grep -q 'tg32 .*tok/s .*peak RSS [0-9]* MiB   spec draft: drafted 24, accepted 24 (100\.0 %)$' "$OUT/bench.txt" &&
    grep 'pp8 ' "$OUT/bench.txt" | grep -qv spec; then ok "bench --spec: the text line ends with the drafts and acceptance"
else not_ok "bench --spec: the text line ends with the drafts and acceptance" "$(cat "$OUT/bench.txt")"; fi
name="bench --spec draft without -md is a usage error naming -md"
"$BIN" bench -m "$M" --spec draft >"$OUT/bench.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "^tokscope bench: --spec draft needs a draft model (-md FILE)" "$OUT/bench.out"; then ok "$name"
else not_ok "$name" "exit $rc" "$(head -n 2 "$OUT/bench.out")"; fi
name="bench --spec draft with another vocabulary's draft model: exit 1, the mismatch named"
if need "$TESTDATA/models/tiny-spm-q8_0.gguf" "$name"; then
    "$BIN" bench -m "$M" -p 0 -n 4 -r 1 --spec draft -md "$TESTDATA/models/tiny-spm-q8_0.gguf" >"$OUT/bench.out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q "vocabulary does not match the target's: the target has 512 tokens, the draft 32000" "$OUT/bench.out" &&
        ! grep -q 'tg4' "$OUT/bench.out"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(head -n 3 "$OUT/bench.out")"; fi
fi
name="bench --spec mtp on a model without an MTP block: exit 1, refused"
"$BIN" bench -m "$M" -p 0 -n 4 -r 1 --spec mtp >"$OUT/bench.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "no MTP block" "$OUT/bench.out"; then ok "$name"
else not_ok "$name" "exit $rc" "$(head -n 3 "$OUT/bench.out")"; fi
for bad in "-p x" "-d 1,,2" "-t 0" "-ctk q2_k" "-o csv" "--blas maybe" "--blas on,,off" "--spec eagle" "--draft-max 65" \
    "--spec-ngram-n 0"; do
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
# make bench's ik_llama.cpp column (issue 36), against stand-ins for the two
# llama-benches: llama.cpp's prints JSON lines at 50 tok/s; ik's prints one
# JSON array as ik's does (-o json), refuses -d, takes -gp D,N and -rtr,
# and runs at 100 tok/s (-rtr 0) or 200 (-rtr 1). Section 9 (the issue's
# table) on stories260K: ik gets its -gp for a tg at a depth, nothing for
# a pp at a depth (said so), the faster -rtr wins, the ratios are tokscope's
# mean over the other's.
cat >"$OUT/fake_bench.py" <<'EOF_FAKE'
import json, os, sys
ik = sys.argv[1] == 'ik'
a, o = sys.argv[2:], {}
open(sys.argv[1] + '.args', 'a').write(' '.join(a) + '\n')
for i in range(0, len(a), 2):
    o.setdefault(a[i], a[i + 1])
if ik and '-d' in o:
    sys.exit('error: invalid parameter for argument: -d')
rtr = int(o.get('-rtr', 0))
base = {'model_filename': o['-m'], 'n_threads': int(o['-t']), 'type_k': o.get('-ctk', 'f16'),
        'type_v': o.get('-ctv', 'f16'), 'avg_ts': (200.0 if rtr else 100.0) if ik else 50.0, 'stddev_ts': 0.0}
# FAKE_ALT: llama.cpp's runs alternate between 50 and 70 tok/s
if not ik and os.environ.get('FAKE_ALT') and len(open('llama.args').read().splitlines()) % 2 == 0:
    base['avg_ts'] = 70.0
out = [dict(base, n_prompt=int(p), n_gen=0) for p in o['-p'].split(',') if p != '0'] + \
      [dict(base, n_prompt=0, n_gen=int(n)) for n in o['-n'].split(',') if n != '0']
if ik:
    for d in out:
        d.update(repack=bool(rtr), test='pp%d' % d['n_prompt'] if d['n_prompt'] else 'tg%d' % d['n_gen'])
    if '-gp' in o:
        dd, n = map(int, o['-gp'].split(','))
        out.append(dict(base, n_prompt=dd, n_gen=n, repack=bool(rtr), test='tg%d@pp%d' % (n, dd)))
    print('[\n' + ',\n'.join('  ' + json.dumps(d) for d in out) + '\n]')
else:
    print('\n'.join(json.dumps(dict(d, n_depth=int(o.get('-d', 0)))) for d in out))
EOF_FAKE
for b in llama ik; do
    printf '#!/bin/sh\ncd "%s" && exec python3 fake_bench.py %s "$@"\n' "$(cd "$OUT" && pwd)" "$b" >"$OUT/fake_$b"
    chmod +x "$OUT/fake_$b"
done
rm -f "$OUT/llama.args" "$OUT/ik.args"
name="make bench IK_BENCH=...: the ik_llama.cpp column, best of -rtr 0 and 1, -gp for a depth, both ratios"
M_ABS=$(cd "$(dirname "$M")" && pwd)/$(basename "$M")
BENCH_SMALL=0 BENCH_BIG=0 BENCH_FAMILIES=0 BENCH_BLAS=0 BENCH_TUI=0 BENCH_2026=0 BENCH_IQ=0 BENCH_IK_TABLE=1 \
    BENCH_IK_ROWS="$M_ABS" BENCH_IK_TESTS=pp8,tg4,tg4@d16,pp8@d16 BENCH_IK_ROUNDS=2 BENCH_REPS=1 \
    BENCH_IK_OUT="$OUT/bench-ik" LLAMA_BENCH="$OUT/fake_llama" IK_BENCH="$OUT/fake_ik" BIN=$BIN \
    sh tests/bench.sh >"$OUT/bench-ik.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && python3 -c "
import json, statistics, sys
out, ik_args = open(sys.argv[1]).read(), open(sys.argv[3]).read().splitlines()
rows = {l.split(' | ')[1]: l.strip('| \n').split(' | ') for l in open(sys.argv[2]) if l.startswith('| stories260K |')}
recs = [json.loads(l) for l in open(sys.argv[4])]
name = lambda r: ('pp%d' % r['n_prompt'] if r['n_prompt'] else 'tg%d' % r['n_gen']) + (' @ d%d' % r['n_depth'] if r['n_depth'] else '')
# tokscope's mean on test t, over every round or over one
ts = lambda t, rnd=None: statistics.mean(r['avg_ts'] for r in recs if r['prog'] == 'tokscope' and name(r) == t and
    rnd in (None, r['round']))
ok = sorted(rows) == ['pp8', 'pp8 @ d16', 'tg4', 'tg4 @ d16'] and len(ik_args) == 8
ok = ok and sum('-rtr 1 -p 0 -n 0 -gp 16,4' in a for a in ik_args) == 2 and sum('-rtr 0 -p 8 -n 4' in a for a in ik_args) == 2
for t in ('pp8', 'tg4', 'tg4 @ d16'):
    r = rows[t]
    ok = ok and r[3] == '50.0' and r[4] == '200 (rtr)' and r[5] == '%.2f' % (ts(t) / 50) and r[6] == '%.2f' % (ts(t) / 200)
    # each round's own ratio: two rounds, the median between them
    per = [ts(t, n) / 200 for n in (1, 2)]
    ok = ok and r[9] == '%.2f, %.2f (median %.2f)' % (per[0], per[1], statistics.median(per))
ok = ok and rows['pp8 @ d16'][4].startswith('- (cannot: no prompt test at a depth') and rows['pp8 @ d16'][6] == '-'
ok = ok and rows['pp8 @ d16'][9] == '-'
ok = ok and 'ik    200.00 rtr  ratio' in out and 'ik cannot: no prompt test at a depth' in out
# the builds compared, each named (the stand-ins hold no AVX-512 code)
ok = ok and open(sys.argv[2]).readline().endswith('build); llama.cpp AVX2 build; ik AVX2 build; F16 cache\n')
ok = ok and out.splitlines()[0].endswith(' repetitions; llama.cpp AVX2 build; ik AVX2 build')
sys.exit(0 if ok else 1)" "$OUT/bench-ik.out" "$OUT/bench-ik.md" "$OUT/ik.args" "$OUT/bench-ik.jsonl"; then ok "$name"
else not_ok "$name" "exit $rc" "$(tail -n 8 "$OUT/bench-ik.out")" "$(cat "$OUT/ik.args")"; fi
# BENCH_TRIES=2: tokscope and llama.cpp run twice a test, as ik does (-rtr 0
# and 1), and the faster run is kept; the first lines say so; a count that
# is not one is refused
name="make bench BENCH_TRIES=2: tokscope and llama.cpp the faster of two runs a test"
rm -f "$OUT/llama.args" "$OUT/ik.args"
FAKE_ALT=1 BENCH_TRIES=2 BENCH_SMALL=0 BENCH_BIG=0 BENCH_FAMILIES=0 BENCH_BLAS=0 BENCH_TUI=0 BENCH_2026=0 BENCH_IQ=0 \
    BENCH_IK_TABLE=1 BENCH_IK_ROWS="$M_ABS" BENCH_IK_TESTS=pp8,tg4 BENCH_IK_ROUNDS=1 BENCH_REPS=1 \
    BENCH_IK_OUT="$OUT/bench-tries" LLAMA_BENCH="$OUT/fake_llama" IK_BENCH="$OUT/fake_ik" BIN=$BIN \
    sh tests/bench.sh >"$OUT/bench-tries.out" 2>&1
rc=$?
BENCH_TRIES=x BENCH_SMALL=0 BENCH_BIG=0 BENCH_FAMILIES=0 BENCH_BLAS=0 BENCH_TUI=0 BENCH_2026=0 BENCH_IQ=0 \
    BIN=$BIN sh tests/bench.sh >"$OUT/bench-tries-bad.out" 2>&1
rc_bad=$?
if [ $rc -eq 0 ] && [ $rc_bad -eq 2 ] && grep -q "BENCH_TRIES: a count of runs, not 'x'" "$OUT/bench-tries-bad.out" &&
    [ "$(wc -l <"$OUT/llama.args")" -eq 2 ] && python3 -c "
import json, sys
rows = {l.split(' | ')[1]: l.strip('| \n').split(' | ') for l in open(sys.argv[1]) if l.startswith('| stories260K |')}
recs = [json.loads(l) for l in open(sys.argv[2])]
ok = sorted(rows) == ['pp8', 'tg4'] and all(rows[t][3] == '70.0' for t in rows)
ok = ok and sum(r['prog'] == 'tokscope' for r in recs) == 2 and sum(r['prog'] == 'llama.cpp' for r in recs) == 2
ok = ok and 'tokscope and llama.cpp the faster of 2 runs a test; F16 cache' in open(sys.argv[1]).readline()
ok = ok and open(sys.argv[3]).readline().rstrip().endswith('; tokscope and llama.cpp the faster of 2 runs a test')
sys.exit(0 if ok else 1)" "$OUT/bench-tries.md" "$OUT/bench-tries.jsonl" "$OUT/bench-tries.out"; then ok "$name"
else not_ok "$name" "exit $rc, $rc_bad" "$(tail -n 6 "$OUT/bench-tries.out")" "$(head -n 3 "$OUT/bench-tries.md")"; fi
# the machine named by family, model and core in both first lines (the
# model name alone, "AMD EPYC" on a cloud VM, let three sessions take a Zen 4
# for a Zen 5), and cpu_name's core for each kind of /proc/cpuinfo
. tests/lib_cpu.sh
name="make bench, section 9: the CPU named by family, model and core"
cpu=$(cpu_name)
cores=""
for fm in "AuthenticAMD 26 2" "AuthenticAMD 25 17" "AuthenticAMD 25 97" "AuthenticAMD 25 1" "AuthenticAMD 25 80" \
    "AuthenticAMD 23 49" "GenuineIntel 6 143"; do
    echo "$fm" | awk '{ printf "processor\t: 0\nvendor_id\t: %s\ncpu family\t: %s\nmodel\t\t: %s\nmodel name\t: X\n", $1, $2, $3 }' \
        >"$OUT/cpuinfo"
    cores="$cores$(cpu_name "$OUT/cpuinfo");"
done
want="X (family 26 model 2, Zen 5);X (family 25 model 17, Zen 4);X (family 25 model 97, Zen 4);X (family 25 model 1, Zen 3);"
want="${want}X (family 25 model 80, Zen 3);X (family 23 model 49, Zen 2);X (family 6 model 143);"
if case "$cpu" in *"(family "*" model "*) true ;; *) false ;; esac &&
    [ "$(head -n 1 "$OUT/bench-ik.md" | cut -c1-${#cpu})" = "$cpu" ] &&
    [ "$(head -n 1 "$OUT/bench-ik.out" | cut -c1-$((${#cpu} + 9)))" = "machine: $cpu" ] && [ "$cores" = "$want" ]; then
    ok "$name"
else not_ok "$name" "cpu_name: $cpu" "$(head -n 1 "$OUT/bench-ik.md")" "$(head -n 1 "$OUT/bench-ik.out")" "$cores"; fi
# an IQ or MXFP4 row whose file was written before runs without
# llama-quantize: LLAMA_BENCH=true (llama.cpp left out) has none beside it
# (the rows were skipped, "no llama-quantize"). The file: a stand-in under
# a layer count no real run uses, removed after.
name="make bench, section 9: an IQ row's written file measured with llama.cpp left out"
IQF="${BUILD:-build}/bench-models/tinyllama-1.1b-lgolden-iq4_xs.gguf"
mkdir -p "$(dirname "$IQF")" && ln -sf "$M_ABS" "$IQF"
BENCH_SMALL=0 BENCH_BIG=0 BENCH_FAMILIES=0 BENCH_BLAS=0 BENCH_TUI=0 BENCH_2026=0 BENCH_IQ=0 BENCH_IK_TABLE=1 \
    BENCH_IK_ROWS=iq4_xs BENCH_IQ_LAYERS=golden BENCH_IK_TESTS=pp8 BENCH_IK_ROUNDS=1 BENCH_REPS=1 \
    BENCH_IK_OUT="$OUT/bench-ik-iq" LLAMA_BENCH=true LLAMA_QUANTIZE='' IK_BENCH="$OUT/fake_ik" BIN=$BIN \
    sh tests/bench.sh >"$OUT/bench-ik-iq.out" 2>&1
rc=$?
rm -f "$IQF"
if [ $rc -eq 0 ] && grep -q '^| iq4_xs | pp8 | .* | 200 (rtr) |' "$OUT/bench-ik-iq.md" &&
    ! grep -q 'no llama-quantize' "$OUT/bench-ik-iq.out" && ! head -n 1 "$OUT/bench-ik-iq.md" | grep -q llama.cpp; then
    ok "$name"
else not_ok "$name" "exit $rc" "$(tail -n 6 "$OUT/bench-ik-iq.out")"; fi
