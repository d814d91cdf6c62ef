#!/bin/sh
# The official OpenAI JavaScript SDK (npm `openai`, pinned below) against
# tokscope serve on loopback: tests/tools/serve_sdk.mjs. The package is
# installed at test time into $BUILD/npm-openai (kept there for later runs,
# never committed); without node, npm or the package the suite skips.
. tests/lib.sh
. tests/lib_serve.sh
SDK_VERSION=6.49.0
SDK_DIR=${BUILD:-build}/npm-openai
S=$TESTDATA/models/stories260K.gguf
sdk_ready() {
    grep -q "\"version\": \"$SDK_VERSION\"" "$SDK_DIR/node_modules/openai/package.json" 2>/dev/null
}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "skip - serve with the OpenAI SDK (node or npm not installed)"
elif ! sdk_ready && ! { mkdir -p "$SDK_DIR" && (cd "$SDK_DIR" && timeout 300 npm install --no-audit --no-fund \
    --no-save --silent "openai@$SDK_VERSION") >"$OUT/serve_sdk_npm.log" 2>&1 && sdk_ready; }; then
    echo "skip - serve with the OpenAI SDK (npm could not install openai@$SDK_VERSION: $(tail -n 1 "$OUT/serve_sdk_npm.log"))"
elif need "$S" "serve with the OpenAI SDK on stories260K"; then
    if serve_start "$OUT/serve_sdk.log" -m "$S"; then
        timeout 120 node tests/tools/serve_sdk.mjs "$SDK_DIR/node_modules/openai" "$SPORT" stories260K.gguf
        serve_stop
    else
        not_ok "serve with the OpenAI SDK: the server starts" "$(tail -n 5 "$OUT/serve_sdk.log")"
    fi
fi
