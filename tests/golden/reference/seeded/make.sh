#!/bin/sh
# Remakes the seeded-sampling goldens from llama.cpp 34af94cd (/work/ref):
#   sampler.txt   sampler_ref.c: libllama's sampler chains alone on synthetic
#                 logits, the token each step selects, per chain and seed
#   generate.tsv  llama-server /completion, prompt "Once upon a time",
#                 40 tokens, per model and setting: name, model, the matching
#                 `tokscope generate` options, the reply's token ids, its text (JSON)
#   spec.tsv      llama-server with speculative decoding, stories260K, the
#                 prompt of tests/golden/spec.sh, 120 tokens at temp 0.8 seed 42:
#                 tokscope's --spec options, the server's, its text (JSON). Its
#                 batched verification rows round unlike one-token rows, so
#                 these replies differ from the replies without drafts.
# (tiny-spm is left out: the server refuses its random text as "not Content-only".)
# Run from anywhere: sh tests/golden/reference/seeded/make.sh
set -eu
REF=${REF:-/work/ref}
HERE=$(cd "$(dirname "$0")" && pwd)
M=${M:-$HERE/../../../../../shared/models}
TMP=$(mktemp -d)
trap 'kill $SRV 2>/dev/null || true; rm -rf "$TMP"' EXIT
SRV=

gcc -O1 -Wall -I"$REF/include" -I"$REF/ggml/include" "$HERE/sampler_ref.c" -o "$TMP/sampler_ref" \
    -L"$REF/build/bin" -lllama -Wl,-rpath,"$REF/build/bin"
"$TMP/sampler_ref" >"$HERE/sampler.txt"

# name | tokscope generate options | the same settings as /completion JSON fields
SETTINGS='default42|--seed 42|"seed":42
default7|--seed 7|"seed":7
hot1234|--seed 1234 --temp 1.0|"seed":1234,"temperature":1.0
temponly|--seed 42 --temp 1.0 --top-k 0 --top-p 1 --min-p 0|"seed":42,"temperature":1.0,"top_k":0,"top_p":1.0,"min_p":0.0
topp|--seed 5 --top-k 0 --top-p 0.9 --min-p 0|"seed":5,"top_k":0,"top_p":0.9,"min_p":0.0
minp|--seed 3 --temp 1.5 --top-k 0 --top-p 1 --min-p 0.1|"seed":3,"temperature":1.5,"top_k":0,"top_p":1.0,"min_p":0.1
penalties|--seed 42 --repeat-penalty 1.3 --frequency-penalty 0.2 --presence-penalty 0.1|"seed":42,"repeat_penalty":1.3,"frequency_penalty":0.2,"presence_penalty":0.1
typical|--seed 11 --typical-p 0.9|"seed":11,"typical_p":0.9
greedy|--seed 42 --temp 0|"seed":42,"temperature":0.0'

: >"$TMP/out.tsv"
for model in stories260K stories260K-q8_0; do
    port=$((18000 + $$ % 1000))
    "$REF/build/bin/llama-server" -m "$M/$model.gguf" --port $port -t 1 -np 1 --no-warmup -c 256 \
        >"$TMP/srv.log" 2>&1 &
    SRV=$!
    for i in $(seq 60); do
        curl -sf "localhost:$port/health" >/dev/null 2>&1 && break
        sleep 0.5
    done
    echo "$SETTINGS" | while IFS='|' read -r name opts json; do
        curl -sf "localhost:$port/completion" -d "{\"prompt\":\"Once upon a time\",\"n_predict\":40,\"return_tokens\":true,\"cache_prompt\":false,$json}" |
            python3 -c "import json,sys; d=json.load(sys.stdin); print('\t'.join(['$name','$model','$opts',','.join(map(str,d['tokens'])),json.dumps(d['content'])]))" \
            >>"$TMP/out.tsv"
    done
    kill $SRV
    wait $SRV 2>/dev/null || true
    SRV=
done
mv "$TMP/out.tsv" "$HERE/generate.tsv"

P="Once upon a time there was a little girl. Once upon a time there was a little boy. Once upon a time"
SPECS="--spec ngram --spec-ngram-n 1 --draft-max 5|--spec-type ngram-simple --spec-ngram-simple-size-n 1 --spec-ngram-simple-size-m 5 --spec-draft-n-max 5
--spec draft -md MODEL|-md MODEL --spec-type draft-simple --spec-draft-n-max 3"
: >"$TMP/spec.tsv"
echo "$SPECS" | while IFS='|' read -r opts sopts; do
    port=$((18000 + $$ % 1000))
    # shellcheck disable=SC2086
    "$REF/build/bin/llama-server" -m "$M/stories260K.gguf" $(echo "$sopts" | sed "s|MODEL|$M/stories260K.gguf|") \
        --port $port -t 2 -np 1 -c 4096 --no-warmup >"$TMP/srv.log" 2>&1 &
    SRV=$!
    for i in $(seq 60); do
        curl -sf "localhost:$port/health" >/dev/null 2>&1 && break
        sleep 0.5
    done
    curl -sf "localhost:$port/completion" -d "{\"prompt\":\"$P\",\"n_predict\":120,\"seed\":42,\"temperature\":0.8,\"cache_prompt\":false}" |
        python3 -c "import json,sys; d=json.load(sys.stdin); print('\t'.join(['$opts','$sopts',json.dumps(d['content'])]))" \
        >>"$TMP/spec.tsv"
    kill $SRV
    wait $SRV 2>/dev/null || true
    SRV=
done
mv "$TMP/spec.tsv" "$HERE/spec.tsv"
