#!/bin/sh
# Tokenizer against llama.cpp's test-tokenizer-0 vectors: every
# golden/tokenizer/*.inp with its .out must match exactly (one check per
# vocab); the vocabs without .out must load, tokenize the same cases and
# round-trip. Plus CLI behaviour: special tokens, BOS, errors.
. tests/lib.sh

G="$TESTDATA/golden/tokenizer"
CASES="$G/ggml-vocab-gpt-2.gguf.inp"

vocab_path() { # NAME.gguf -> path (vocab dir, else models/; a path as is)
    case $1 in */*) echo "$1"; return ;; esac
    if [ -f "$G/$1" ]; then echo "$G/$1"; else echo "$TESTDATA/models/$1"; fi
}

# cases NAME VOCAB INP OUT: `tokenize --cases INP` must print OUT exactly.
cases() {
    name=$1 model=$2 inp=$3 out=$4
    need "$model" "$name" || return 0
    if "$BIN" tokenize -m "$model" --cases "$inp" >"$OUT/tok.got" 2>"$OUT/tok.err" && cmp -s "$OUT/tok.got" "$out"; then
        ok "$name"
    else
        not_ok "$name" "$(diff "$OUT/tok.got" "$out" | grep -c '^<') of $(wc -l <"$out") cases differ" \
            "$(diff "$OUT/tok.got" "$out" | head -n 4)" "$(head -c 300 "$OUT/tok.err")"
    fi
}

if need "$G" tokenizer-golden-dir; then
    for inp in "$G"/*.inp; do
        name=$(basename "$inp" .inp)
        out="$G/$name.out"
        [ -f "$out" ] || continue
        cases "tokenizer-$name" "$(vocab_path "$name")" "$inp" "$out"
    done

    # vocabs whose expected ids live elsewhere: load, tokenize every case, round-trip
    for v in ggml-vocab-phi-3.gguf ggml-vocab-falcon.gguf ggml-vocab-refact.gguf ggml-vocab-deepseek-coder.gguf \
        ggml-vocab-mpt.gguf ggml-vocab-gpt-2.gguf ggml-vocab-llama-spm.gguf ggml-vocab-starcoder.gguf \
        ggml-vocab-deepseek-llm.gguf smollm-mini-q8_0.gguf; do
        model=$(vocab_path "$v")
        need "$model" "tokenizer-roundtrip-$v" || continue
        need "$CASES" "tokenizer-roundtrip-$v" || continue
        ncases=$(grep -c '^__ggml_vocab_test__$' "$CASES")
        if "$BIN" tokenize -m "$model" --cases "$CASES" --roundtrip >"$OUT/tok-rt.got" 2>"$OUT/tok-rt.err" &&
            [ "$(wc -l <"$OUT/tok-rt.got")" -eq "$ncases" ]; then
            ok "tokenizer-roundtrip-$v"
        else
            not_ok "tokenizer-roundtrip-$v" "$(head -c 400 "$OUT/tok-rt.err")"
        fi
    done
fi

# Every vocab, including the five shipped without expected ids, against
# llama.cpp on the shared cases plus 58 more (scripts, emoji, combining
# marks, digits, whitespace runs, code, special-token text left unparsed):
# tests/golden/reference/tokenizer, see its README.
R=tests/golden/reference/tokenizer
for out in "$R"/*.out; do
    name=$(basename "$out" .out)
    cases "tokenizer-reference-$name" "$(vocab_path "$name")" "$R/cases.inp" "$out"
done

# Hand-checked ids from llama.cpp's own .out files for the vocabs shipped without one
# ("Führer": a user-defined token matches even without special parsing in deepseek-coder).
spot() { # NAME VOCAB EXPECTED TEXT [OPTIONS]
    name=$1 model=$(vocab_path "$2") exp=$3 text=$4
    shift 4
    need "$model" "$name" || return 0
    got=$(printf '%s' "$text" | "$BIN" tokenize -m "$model" "$@" 2>&1)
    if [ "$got" = "$exp" ]; then ok "$name"; else not_ok "$name" "expected '$exp'" "got      '$got'"; fi
}
spot tokenizer-falcon-fuhrer ggml-vocab-falcon.gguf "28611 132 30042" "Führer" --no-bos
spot tokenizer-phi3-fuhrer ggml-vocab-phi-3.gguf "383 4000 261" "Führer" --no-bos
spot tokenizer-refact-fuhrer ggml-vocab-refact.gguf "56 2006 3935 265" "Führer" --no-bos
spot tokenizer-dscoder-fuhrer ggml-vocab-deepseek-coder.gguf "37 32009 71 6247" "Führer" --no-bos
spot tokenizer-mpt-fuhrer ggml-vocab-mpt.gguf "39 26288 6554" "Führer" --no-bos
spot tokenizer-mpt-spaces ggml-vocab-mpt.gguf "50276 12092" "  Hello" --no-bos
spot tokenizer-falcon-digits ggml-vocab-falcon.gguf "22287 22287 3138" "33333333" --no-bos
spot tokenizer-dscoder-digits ggml-vocab-deepseek-coder.gguf "18 18 18 18" "3333" --no-bos

# special tokens and BOS through the CLI
M="$TESTDATA/models/smollm-mini-q8_0.gguf"
spot tokenizer-cli-special-on smollm-mini-q8_0.gguf "1 4093" "<|im_start|>user" --special
spot tokenizer-cli-special-off smollm-mini-q8_0.gguf "44 108 306 79 3738 108 46 4093" "<|im_start|>user"
spot tokenizer-cli-spm-bos ggml-vocab-llama-spm.gguf "1 15043 3186" "Hello world"
spot tokenizer-cli-spm-no-bos ggml-vocab-llama-spm.gguf "15043 3186" "Hello world" --no-bos
spot tokenizer-cli-spm-special ggml-vocab-llama-spm.gguf "1 1 15043" "<s>Hello" --special

if need "$M" tokenizer-cli-pieces; then
    got=$(printf 'Hi there' | "$BIN" tokenize -m "$M" --pieces 2>&1)
    if echo "$got" | grep -q "'Hi'" && echo "$got" | grep -q "' there'" && [ "$(echo "$got" | wc -l)" -eq 2 ]; then
        ok tokenizer-cli-pieces
    else
        not_ok tokenizer-cli-pieces "$got"
    fi
fi

# --decode: ids back to text (byte tokens reassemble the emoji)
if need "$G/ggml-vocab-llama-spm.gguf" tokenizer-cli-decode; then
    got=$(echo "15043 3186 29871 243 162 169 156" | "$BIN" tokenize -m "$G/ggml-vocab-llama-spm.gguf" --decode 2>&1)
    if [ "$got" = "Hello world 🦙" ]; then ok tokenizer-cli-decode; else not_ok tokenizer-cli-decode "got '$got'"; fi
    echo "1 99999999" | "$BIN" tokenize -m "$G/ggml-vocab-llama-spm.gguf" --decode >"$OUT/tok-err.out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q 99999999 "$OUT/tok-err.out"; then ok tokenizer-cli-decode-bad-id; else
        not_ok tokenizer-cli-decode-bad-id "rc=$rc" "$(cat "$OUT/tok-err.out")"; fi
fi

# Gemma 4 (tokenizer model gemma4; its ids against llama.cpp are checked by
# golden/families2026): its own cases and the shared ones round-trip; special
# tokens through the CLI, ids from its .out ("Hello" 9259, "\n" 107, the llama
# 478 397 404 391) and its vocab (<bos> 2, <|turn> 105, user-defined <|"|> 52
# matched even unparsed, as llama.cpp does)
G4="$TESTDATA/families2026/golden/tokenizer/ggml-vocab-gemma-4.gguf"
if need "$G4" tokenizer-gemma4-roundtrip; then
    for c in "$G4.inp" "$CASES"; do
        ncases=$(grep -c '^__ggml_vocab_test__$' "$c")
        if "$BIN" tokenize -m "$G4" --cases "$c" --roundtrip >"$OUT/tok-rt.got" 2>"$OUT/tok-rt.err" &&
            [ "$(wc -l <"$OUT/tok-rt.got")" -eq "$ncases" ]; then
            ok "tokenizer-gemma4-roundtrip-$(basename "$c")"
        else
            not_ok "tokenizer-gemma4-roundtrip-$(basename "$c")" "$(head -c 400 "$OUT/tok-rt.err")"
        fi
    done
fi
spot tokenizer-gemma4-special-on "$G4" "2 105 9259 107" "<|turn>Hello
" --special
spot tokenizer-gemma4-user-defined "$G4" "2 52 9259" '<|"|>Hello'
spot tokenizer-gemma4-no-bos "$G4" "9259 107" "Hello
" --no-bos
if need "$G4" tokenizer-gemma4-decode; then
    got=$(echo "2 105 9259 107 106 478 397 404 391" | "$BIN" tokenize -m "$G4" --decode 2>&1)
    if [ "$got" = "<bos><|turn>Hello
<turn|>🦙" ]; then ok tokenizer-gemma4-decode; else not_ok tokenizer-gemma4-decode "got '$got'"; fi
fi
# `info` says what the gemma4 model name means and that it implies its own pre-tokenizer
if need "$G4" tokenizer-gemma4-info; then
    "$BIN" info "$G4" >"$OUT/tok-info.out" 2>&1
    if grep -Eq '^  model +gemma4$' "$OUT/tok-info.out" &&
        grep -Eq '^  kind +BPE over SentencePiece-style text' "$OUT/tok-info.out" &&
        grep -Eq '^  pre +- \(absent: gemma4 implies gemma4\)$' "$OUT/tok-info.out"; then
        ok tokenizer-gemma4-info
    else
        not_ok tokenizer-gemma4-info "$(sed -n '/^tokenizer:/,/^  vocab/p' "$OUT/tok-info.out")"
    fi
fi

# errors: unreadable files give a message and exit 1, never a crash
printf 'x' | "$BIN" tokenize -m /nonexistent/model.gguf >"$OUT/tok-err.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q nonexistent "$OUT/tok-err.out"; then ok tokenizer-cli-missing-model; else
    not_ok tokenizer-cli-missing-model "rc=$rc" "$(cat "$OUT/tok-err.out")"; fi
if need "$M" tokenizer-cli-missing-cases; then
    "$BIN" tokenize -m "$M" --cases /nonexistent/cases.inp >"$OUT/tok-err.out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'cases.inp' "$OUT/tok-err.out"; then ok tokenizer-cli-missing-cases; else
        not_ok tokenizer-cli-missing-cases "rc=$rc" "$(cat "$OUT/tok-err.out")"; fi
fi
printf 'not a gguf' >"$OUT/tok-junk.gguf"
printf 'x' | "$BIN" tokenize -m "$OUT/tok-junk.gguf" >"$OUT/tok-err.out" 2>&1
rc=$?
if [ $rc -eq 1 ]; then ok tokenizer-cli-junk-model; else not_ok tokenizer-cli-junk-model "rc=$rc"; fi
