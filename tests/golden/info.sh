#!/bin/sh
# `tokscope info` and the GGUF reader: a generated corpus of valid and
# malformed files (tests/tools/gguf_corpus.c, built by make), every model and
# vocab in ../shared, and truncated copies of the stories260K files.
# Malformed input must exit exactly 1 (not 0, not a signal) with a message
# on stderr that names the field and the byte offset.
#
# By hand, under valgrind (a portable build: valgrind lacks AVX-512):
#   make BUILD=build-vg BIN=build-vg/tokscope NATIVE=0 build-vg/tokscope build-vg/tools/gguf_corpus \
#     build-vg/tools/info_each
#   INFO_WRAP="valgrind -q --error-exitcode=9 --leak-check=full" BUILD=build-vg \
#     BIN=build-vg/tokscope sh tests/golden/info.sh
# (a valgrind error turns into exit 9 and fails the check; valgrind follows
# info_each's forked children).
. tests/lib.sh
BUILD=${BUILD:-build}
CORPUS_TOOL=$BUILD/tools/gguf_corpus
# private scratch space: several checkouts' test runs may share tests/out
W=$(mktemp -d "$OUT/info.XXXXXX") || exit 1
CORPUS=$W/gguf_corpus

# run_info ARGS...: sets rc; output in $W/out, $W/err
run_info() {
    ${INFO_WRAP:-} "$BIN" info "$@" >"$W/out" 2>"$W/err"
    rc=$?
}

rc_text() {
    if [ "$1" -gt 128 ]; then echo "killed by signal $(($1 - 128))"; else echo "exit $1"; fi
}

# ---- usage ----------------------------------------------------------------
run_info --help
if [ "$rc" -eq 0 ] && grep -q 'usage: tokscope info' "$W/out" && grep -q -- '--kv' "$W/out"; then
    ok "info --help"
else not_ok "info --help" "$(rc_text $rc)"; fi
run_info
if [ "$rc" -eq 2 ] && grep -q usage "$W/err"; then ok "info without a model is a usage error"
else not_ok "info without a model is a usage error" "$(rc_text $rc)"; fi
run_info --bogus x.gguf
if [ "$rc" -eq 2 ]; then ok "info rejects unknown options"; else not_ok "info rejects unknown options" "$(rc_text $rc)"; fi
run_info "$OUT/does-not-exist.gguf"
if [ "$rc" -eq 1 ] && grep -q '^tokscope: .*does-not-exist.gguf: cannot open' "$W/err"; then
    ok "info on a missing file"
else not_ok "info on a missing file" "$(rc_text $rc): $(cat "$W/err")"; fi
run_info "$OUT"
if [ "$rc" -eq 1 ] && grep -q 'not a regular file' "$W/err"; then ok "info on a directory"
else not_ok "info on a directory" "$(rc_text $rc): $(cat "$W/err")"; fi

# ---- generated corpus -----------------------------------------------------
# ~1,100 files and ~1,600 cuts below: each runs through tests/tools/info_each,
# `tokscope info` in a forked child per file (its own exit status, signals and
# sanitizer checks) instead of an exec per file (~40 ms of dynamic linking
# each, far more under ASan).
EACH=$BUILD/tools/info_each
tab=$(printf '\t')
# verdicts < SEL: SEL's lines (LABEL <TAB> ok|fail <TAB> SUBSTRING) with
# info_each's results (RESULTS, line by line); prints "ok <TAB> LABEL" or
# "bad <TAB> LABEL <TAB> WHY" per line. fail: malformed input exits exactly 1
# (not 0, not a signal), writes nothing to stdout and "tokscope: ...SUBSTRING...
# at offset N: ..." to stderr; ok: exit 0, stdout starting "file: ", nothing
# on stderr.
verdicts() {
    awk -F"$tab" -v results="$1" '
    function rc_text(rc) { return rc > 128 ? "killed by signal " (rc - 128) : "exit " rc }
    {
        if ((getline r < results) <= 0) { print "bad\t" $1 "\tno result (info_each stopped)"; next }
        split(r, f, "\t"); rc = f[1] + 0; nout = f[2] + 0; first = f[3]; err = f[4]
        sub(/(\\n)+$/, "", err)
        why = ""
        if ($2 == "ok") {
            if (rc != 0 || first !~ /^file: / || err != "") why = rc_text(rc) ": " err
        } else if (rc != 1) why = rc_text(rc) ", want exit 1"
        else if (nout > 0) why = "wrote to stdout on error"
        else if (substr(err, 1, 10) != "tokscope: ") why = "stderr not prefixed '\''tokscope: '\'': " err
        else if ($3 != "" && index(err, $3) == 0) why = "message lacks '\''" $3 "'\'': " err
        else if (err !~ / at offset [0-9]+: /) why = "message names no byte offset: " err
        print (why == "" ? "ok\t" $1 : "bad\t" $1 "\t" why)
    }' 
}
if [ ! -x "$CORPUS_TOOL" ] || [ ! -x "$EACH" ]; then
    not_ok "gguf_corpus and info_each tools" "$CORPUS_TOOL or $EACH not built (make builds tests/tools/*.c)"
else
    rm -rf "$CORPUS"
    if "$CORPUS_TOOL" "$CORPUS" >"$W/corpus.log" 2>&1 && [ -s "$CORPUS/MANIFEST" ]; then
        ok "gguf_corpus writes the corpus ($(cat "$W/corpus.log"))"
    else
        not_ok "gguf_corpus writes the corpus" "$(cat "$W/corpus.log")"
    fi
    # under the sanitizer build every third truncation (see the cuts below)
    awk -v san="${SANITIZED:-}" 'san == 1 && /^trunc_/ && ++n % 3 != 0 { next } 1' "$CORPUS/MANIFEST" >"$W/runs"
    # LIST: info_each's input; SEL: each run's check (label, ok|fail, substring)
    awk -F"$tab" -v dir="$CORPUS" '{ print ($2 == "ok" ? "-\t--kv\t" : "-\t") dir "/" $1 }' "$W/runs" >"$W/list"
    awk -F"$tab" '{ if ($1 ~ /^trunc_/) l = $1; else if ($2 == "ok") l = "corpus: " $1 " loads"
        else l = "corpus: " $1 " rejected (" $3 ")"; print l "\t" $2 "\t" $3 }' "$W/runs" >"$W/sel"
    ${INFO_WRAP:-} "$EACH" "$W/scratch.gguf" <"$W/list" >"$W/results" 2>"$W/each.err" ||
        not_ok "info_each runs the corpus" "$(cat "$W/each.err")"
    verdicts "$W/results" <"$W/sel" >"$W/verdicts"
    # under ASan each distinct outcome runs again with the leak check
    # (tests/tools/info_each.c): see that they ran, and that a leak planted
    # in every child is found by them (its reports in a folder of its own)
    if [ "${SANITIZED:-}" = 1 ]; then
        if k=$(grep -o '[0-9]* distinct outcomes leak-checked' "$W/each.err"); then
            ok "corpus: $k"
        else not_ok "corpus: distinct outcomes leak-checked" "$(cat "$W/each.err")"; fi
        mkdir -p "$W/planted"
        head -n 3 "$W/list" >"$W/list3"
        if ASAN_OPTIONS="$(echo "$ASAN_OPTIONS" | sed "s|log_path=[^:]*|log_path=$W/planted/asan|")" \
            INFO_EACH_PLANT_LEAK=1 "$EACH" "$W/scratch.gguf" <"$W/list3" >/dev/null 2>"$W/planted.err"; then
            not_ok "a leak in info's children is found" "info_each exited 0: $(cat "$W/planted.err")"
        elif grep -q 'leak-checked run of .* exited 86' "$W/planted.err" &&
            grep -qs 'LeakSanitizer: detected memory leaks' "$W/planted"/asan*; then
            ok "a leak in info's children is found by the leak-checked runs"
        else not_ok "a leak in info's children is found" "$(cat "$W/planted.err")"; fi
        rm -rf "$W/planted"
    fi
    n_trunc=0; bad_trunc=0; first_bad=""
    n_valid=0; n_bad=0
    while IFS="$tab" read -r verdict label why; do
        case "$label" in
        trunc_*)
            n_trunc=$((n_trunc + 1))
            if [ "$verdict" != ok ]; then
                bad_trunc=$((bad_trunc + 1))
                [ -z "$first_bad" ] && first_bad="$label: $why"
            fi
            continue ;;
        *" loads") n_valid=$((n_valid + 1)) ;;
        *) n_bad=$((n_bad + 1)) ;;
        esac
        if [ "$verdict" = ok ]; then ok "$label"; else not_ok "$label" "$why"; fi
    done <"$W/verdicts"
    if [ "$n_valid" -ge 6 ] && [ "$n_bad" -ge 50 ]; then ok "corpus has $n_valid valid and $n_bad malformed files"
    else not_ok "corpus has enough files" "valid $n_valid (want >= 6), malformed $n_bad (want >= 50)"; fi
    want_trunc=500; [ "${SANITIZED:-}" = 1 ] && want_trunc=160
    if [ "$n_trunc" -ge "$want_trunc" ] && [ "$bad_trunc" -eq 0 ]; then
        ok "corpus: all $n_trunc truncations of a valid file exit 1 naming field and offset"
    else
        not_ok "corpus: truncations exit 1 naming field and offset" \
            "$bad_trunc of $n_trunc wrong (want >= $want_trunc files)" "$first_bad"
    fi
fi


# ---- real models and vocabs -------------------------------------------------
# has NAME PATTERN: the last info output has a line matching the ERE PATTERN
has() { grep -Eq "$1" "$W/out"; }

# facts MODEL CHECKNAME ERE...: info MODEL exits 0 and every ERE matches a line.
facts() {
    model=$1; label=$2; shift 2
    need "$model" "$label" || return 0
    run_info "$model"
    if [ "$rc" -ne 0 ]; then not_ok "$label" "$(rc_text $rc): $(cat "$W/err")"; return 0; fi
    missing=""
    for re in "$@"; do has "$re" || missing="$missing [$re]"; done
    if [ -z "$missing" ]; then ok "$label"; else not_ok "$label" "no line matches:$missing"; fi
}

M=$TESTDATA/models
facts "$M/stories260K.gguf" "info stories260K: hparams" \
    '^  embedding length +64$' '^  layers +5$' '^  heads +8$' '^  KV heads +4$' '^  FFN length +172$' \
    '^  context length +2048$' '^  rope freq base +- \(absent: default 10000\)$' '^  rms eps +1e-05$' \
    '^  GGUF: +v3, alignment 32, data offset [0-9]+$' '^architecture: +llama$'
facts "$M/stories260K.gguf" "info stories260K: tokenizer, tensors, totals" \
    '^  model +llama$' '^  vocab size +512$' "^  bos +1 '<s>'\$" "^  eos +2 '</s>'\$" "^  unk +0 '<unk>'\$" \
    '^chat template: none$' '^tensors \(48\):$' '^  token_embd\.weight +64 x 512 +F32 +131072$' \
    '^  F32 +48 +292800 +1171200$' '^total parameters: 292800 ' '^output: separate output\.weight$'
facts "$M/stories260K-f16.gguf" "info stories260K-f16: types" '^file type: +1 \(MOSTLY_F16\)$' '^  F16 +[0-9]+ ' \
    '^  layers +5$'
facts "$M/stories260K-q8_0.gguf" "info stories260K-q8_0: Q8_0 with F16 ffn_down" '^file type: +7 \(MOSTLY_Q8_0\)$' \
    '^  Q8_0 +[0-9]+ ' '^  F16 +5 ' '^  blk\.0\.ffn_down\.weight +172 x 64 +F16 '
facts "$M/stories260K-q4_0.gguf" "info stories260K-q4_0: Q4_0 with F16 ffn_down" '^file type: +2 \(MOSTLY_Q4_0\)$' \
    '^  Q4_0 +[0-9]+ ' '^  F16 +5 '
facts "$M/smollm-mini-q8_0.gguf" "info smollm-mini: hparams, BPE, tied output" \
    '^  rope freq base +100000$' '^  embedding length +576$' '^  layers +2$' '^  heads +9$' '^  KV heads +3$' \
    '^  FFN length +1536$' '^  model +gpt2$' '^  pre +smollm$' '^  vocab size +49152$' \
    '^chat template: present \([0-9]+ bytes\)$' '^output: tied embeddings' '^  Q8_0 +[0-9]+ '
for q in f16 q8_0 q4_0 q4_k_m mix; do
    facts "$M/tiny-spm-$q.gguf" "info tiny-spm-$q: hparams, SPM vocab, template" \
        '^  embedding length +256$' '^  layers +4$' '^  heads +8$' '^  KV heads +2$' '^  FFN length +768$' \
        '^  vocab size +32000$' "^  bos +1 '<s>'\$" '^chat template: present \([0-9]+ bytes\)$' \
        '^output: separate output\.weight$' '^tensors \(39\):$'
done
# what --blas auto does with the model, and the library: the measured
# table where OpenBLAS runs its AVX-512 core on an Intel CPU, the Zen 4's
# on an AMD running its Cooperlake core, nothing on its Haswell core (AMD
# Zen 3, Zen 5), where tokscope's kernels won at every batch size; Q5_K and
# Q6_K never with the AVX-512 few-token kernels (engine/kernels/blas.c)
CORE=$("$BIN" info "$M/tiny-spm-q4_0.gguf" 2>/dev/null | sed -n 's/^  OpenBLAS .*; OpenBLAS [0-9.]* (\([^,]*\),.*/\1/p')
SITE=$CORE
if grep -q '^vendor_id.*AuthenticAMD' /proc/cpuinfo; then
    case "$CORE" in
    Cooperlake) SITE=zen4 ;;
    SkylakeX | SapphireRapids) SITE=amd-unmeasured ;;
    esac
fi
case "$SITE" in
zen4)
    facts "$M/tiny-spm-f16.gguf" "info tiny-spm-f16: OpenBLAS's Cooperlake core on an AMD Zen 4, F16 measured slower: auto unused" \
        "^  OpenBLAS +auto: unused on this CPU \\(OpenBLAS's kernels here were measured slower than tokscope's\\); OpenBLAS [0-9.]+ \\(Cooperlake, "
    facts "$M/tiny-spm-mix.gguf" "info tiny-spm-mix: on a Zen 4 OpenBLAS takes Q4_1, Q5_1 and Q3_K, by threshold" \
        '^  OpenBLAS +auto: Q4_1, Q5_1 from 128 tokens; Q3_K from 256 tokens \(7 of 29 matmul weights\); OpenBLAS '
    facts "$M/tiny-spm-q4_0.gguf" "info tiny-spm-q4_0: OpenBLAS has nothing to do" \
        '^  OpenBLAS +auto: unused \(no matmul weight of a type it takes\)'
    ;;
SkylakeX | Cooperlake | SapphireRapids)
    facts "$M/tiny-spm-f16.gguf" "info tiny-spm-f16: OpenBLAS takes every F16 matmul from its threshold ($CORE)" \
        '^  OpenBLAS +auto: F16 from [0-9]+ tokens \(29 of 29 matmul weights\); OpenBLAS [0-9.]+ \('
    if grep -qw avx512bw /proc/cpuinfo; then
        mix='Q4_1, Q5_1 from 64 tokens; F32, Q3_K, BF16 from 128 tokens; Q5_0 from 192 tokens; F16, Q2_K from 256 tokens \(15 of 29'
    else
        mix='Q4_1, Q5_1 from 64 tokens; F32, Q3_K, BF16 from 128 tokens; Q5_0, Q6_K from 192 tokens; F16, Q2_K from 256 tokens \(18 of 29'
    fi
    facts "$M/tiny-spm-mix.gguf" "info tiny-spm-mix: OpenBLAS takes the types it won on, by threshold ($CORE)" \
        "^  OpenBLAS +auto: $mix matmul weights\\); OpenBLAS "
    facts "$M/tiny-spm-q4_0.gguf" "info tiny-spm-q4_0: OpenBLAS has nothing to do" \
        '^  OpenBLAS +auto: unused \(no matmul weight of a type it takes\)'
    ;;
*)
    for q in f16 mix q4_0; do
        facts "$M/tiny-spm-$q.gguf" "info tiny-spm-$q: OpenBLAS's ${CORE:-?} core, measured slower: auto unused" \
            "^  OpenBLAS +auto: unused on this CPU \\(OpenBLAS's kernels here were measured slower than tokscope's\\); OpenBLAS [0-9.]+ \\(${CORE:-none}, "
    done
    ;;
esac
facts "$M/tiny-spm-q4_k_m.gguf" "info tiny-spm-q4_k_m: Q4_K and Q6_K" '^file type: +15 \(MOSTLY_Q4_K_M\)$' \
    '^  Q4_K +[0-9]+ ' '^  Q6_K +[0-9]+ '
# a recurrent model: the state, what explore mode's checkpoints of it cost, no context shift
# (engine/memory/memory.h; the snapshot size is the forward context's own)
facts "$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf" "info qwen35-mini: the recurrent state's checkpoints" \
    "^  state checkpoints +[0-9.]+ KiB each \\(the state and a row of logits\\): one at every prompt's end and every 256\$" \
    '^ +reply tokens, at most 32 and 1024 MiB; going back re-evaluates at most 255 reply tokens$' \
    '^  context shift +none \(a recurrent state cannot drop tokens\)$'
facts "$M/qwen3-mini-q8_0.gguf" "info qwen3-mini: no recurrent state" '^  OpenBLAS '
if [ -f "$M/qwen3-mini-q8_0.gguf" ] && has '^  (state checkpoints|context shift) '; then
    not_ok "info qwen3-mini: no checkpoint lines" "$(grep -E 'recurrent|checkpoints' "$W/out")"
else ok "info qwen3-mini: no checkpoint lines"; fi
# every block type once, in the totals section
facts "$M/tiny-spm-mix.gguf" "info tiny-spm-mix: all 13 types in the totals" \
    '^  F32 +[0-9]+ ' '^  F16 +[0-9]+ ' '^  BF16 +[0-9]+ ' '^  Q4_0 +[0-9]+ ' '^  Q4_1 +[0-9]+ ' '^  Q5_0 +[0-9]+ ' \
    '^  Q5_1 +[0-9]+ ' '^  Q8_0 +[0-9]+ ' '^  Q2_K +[0-9]+ ' '^  Q3_K +[0-9]+ ' '^  Q4_K +[0-9]+ ' '^  Q5_K +[0-9]+ ' \
    '^  Q6_K +[0-9]+ '
if need "$M/tiny-spm-mix.gguf" "info tiny-spm-mix: 13 type rows"; then
    run_info "$M/tiny-spm-mix.gguf"
    n=$(sed -n '/^totals by type:/,/^total parameters/p' "$W/out" | grep -c '^  [A-Z][A-Z0-9_]* \+[0-9]')
    if [ "$n" -eq 13 ]; then ok "info tiny-spm-mix: 13 type rows"; else not_ok "info tiny-spm-mix: 13 type rows" "got $n"; fi
fi

# the type mix of the IQ/TQ minis (each mixes its IQ/TQ type with K types):
# every row of "totals by type" is the per-tensor table's count and bytes of
# that type, and the "type mix" line its share of all tensor bytes, largest
# first; and one file's mix written out
IQM=$TESTDATA/iq/models
n_mix=0; bad_mix=""
for f in "$IQM"/iq-mini-*.gguf; do
    [ -f "$f" ] || continue
    n_mix=$((n_mix + 1))
    run_info "$f"
    [ "$rc" -eq 0 ] || { bad_mix="$bad_mix $(basename "$f"): $(rc_text $rc);"; continue; }
    sums=$(awk '/^tensors \(/ { t = 1; next } /^totals by type:/ { t = 0 }
        t && $NF ~ /^[0-9]+$/ && $(NF-1) ~ /^[A-Z]/ { c[$(NF-1)]++; b[$(NF-1)] += $NF; all += $NF }
        END { for (k in c) printf "%d %s %d %.1f%%\n", b[k], k, c[k], 100 * b[k] / all }' "$W/out")
    want=$(echo "$sums" | awk '{ print $2, $3, $1 }' | sort)
    got=$(sed -n '/^totals by type:/,/^total parameters/p' "$W/out" | awk '$1 ~ /^[A-Z]/ && $2 ~ /^[0-9]+$/ { print $1, $2, $4 }' | sort)
    mix_want="type mix (share of tensor bytes): $(echo "$sums" | sort -k1,1nr | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $4 }')"
    mix_got=$(grep '^type mix' "$W/out")
    [ -n "$want" ] && [ "$want" = "$got" ] || bad_mix="$bad_mix $(basename "$f"): totals want [$want] got [$got];"
    [ "$mix_want" = "$mix_got" ] || bad_mix="$bad_mix $(basename "$f"): want [$mix_want] got [$mix_got];"
done
if [ "$n_mix" -eq 0 ]; then echo "skip - info iq-mini: type mix matches the tensor table (no $IQM/iq-mini-*.gguf)"
elif [ -z "$bad_mix" ]; then ok "info iq-mini: type mix matches the tensor table ($n_mix files)"
else not_ok "info iq-mini: type mix matches the tensor table" "$bad_mix"; fi
facts "$IQM/iq-mini-tq1_0.gguf" "info iq-mini-tq1_0: its mix" '^  TQ1_0 +14 +1507328 +317952$' \
    '^type mix \(share of tensor bytes\): TQ1_0 63\.0%, Q6_K 21\.3%, Q4_K 14\.6%, F32 1\.0%$'

# every model and vocab file loads
n_real=0; bad_real=""
for f in "$M"/*.gguf "$TESTDATA"/golden/tokenizer/*.gguf; do
    [ -f "$f" ] || continue
    n_real=$((n_real + 1))
    run_info --kv "$f"
    if [ "$rc" -ne 0 ]; then bad_real="$bad_real $(basename "$f"): $(rc_text $rc) $(cat "$W/err");"; continue; fi
    case "$f" in
    */golden/tokenizer/*)
        has '^tensors: none \(vocab-only file\)$' && has '^  vocab size +[1-9][0-9]*$' && has '^  tokenizer\.ggml\.tokens +array += \[string x [1-9]' ||
            bad_real="$bad_real $(basename "$f"): vocab facts missing;" ;;
    *)
        has '^total parameters: [1-9][0-9]*' && has '^  general\.architecture +string += ' ||
            bad_real="$bad_real $(basename "$f"): model facts missing;" ;;
    esac
done
if need "$M/stories260K.gguf" "info --kv on every shared model and vocab"; then
    if [ "$n_real" -ge 19 ] && [ -z "$bad_real" ]; then ok "info --kv on every shared model and vocab ($n_real files)"
    else not_ok "info --kv on every shared model and vocab" "files: $n_real (want >= 19)" "$bad_real"; fi
fi
facts "$TESTDATA/golden/tokenizer/ggml-vocab-phi-3.gguf" "info phi-3 vocab: template and specials" \
    '^architecture: +phi3$' '^  vocab size +32064$' "^  eos +32000 '<\|endoftext\|>'\$" \
    '^chat template: present \([0-9]+ bytes\)$' '^tensors: none \(vocab-only file\)$'

# ---- truncated real files ------------------------------------------------------
# Every stories260K variant cut at ~400 offsets: dense over the header,
# key/values and tensor table, sparse over the data. All must exit 1.
# Under the sanitizer build (make test's asan/ part) the Q4_0 one: the
# generated corpus above already walks every reader path under ASan; the
# plain build cuts them all.
VARIANTS=$(ls "$M"/stories260K*.gguf 2>/dev/null)
[ "${SANITIZED:-}" = 1 ] && VARIANTS=$(echo "$VARIANTS" | grep -m 1 q4_0 || echo "$VARIANTS" | head -n 1)
for f in ${VARIANTS:-"$M/stories260K.gguf"}; do
    label="truncated $(basename "$f") exits 1 at every cut"
    need "$f" "$label" || continue
    [ -x "$EACH" ] || { not_ok "$label" "$EACH not built"; continue; }
    run_info "$f"
    data=$(sed -n 's/^  GGUF: .*data offset \([0-9]*\)$/\1/p' "$W/out")
    end=$(sed -n 's/^  data end: *\([0-9]*\) .*/\1/p' "$W/out")
    if [ -z "$data" ] || [ -z "$end" ]; then not_ok "$label" "no data offset/end in info output"; continue; fi
    # cuts at or past the end of the last tensor only lose padding: still valid
    (seq 0 40; seq 41 53 "$data"; seq "$((data - 40))" "$((data + 8))";
     seq "$data" "$(((end - data) / 40 + 1))" "$((end - 1))"; echo "$((end - 1))") | sort -un |
        awk -v end="$end" '$1 < end' >"$W/cuts"
    awk -v f="$f" '{ print $1 "\t" f }' "$W/cuts" >"$W/list"
    awk '{ print "cut at " $1 "\tfail\t" }' "$W/cuts" >"$W/sel"
    ${INFO_WRAP:-} "$EACH" "$W/scratch.gguf" <"$W/list" >"$W/results" 2>"$W/each.err" ||
        not_ok "$label: info_each" "$(cat "$W/each.err")"
    verdicts "$W/results" <"$W/sel" >"$W/verdicts"
    n=$(wc -l <"$W/verdicts")
    bad=$(grep -c -v '^ok' "$W/verdicts")
    first=$(grep -m 1 -v '^ok' "$W/verdicts" | cut -f 2- | sed "s/$tab/: /")
    if [ "$n" -ge 250 ] && [ "$bad" -eq 0 ]; then ok "$label ($n cuts)"
    else not_ok "$label" "$bad of $n cuts wrong (want >= 250 cuts)" "$first" "$(cat "$W/each.err")"; fi
done
rm -rf "$W"
