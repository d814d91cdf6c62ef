#!/bin/sh
# Chat templates: every line of golden/chat/golden.jsonl (transformers'
# renders) reproduced byte for byte, through the chat API (tools/chat_golden,
# one process, plus a smoke render of the templates without golden lines) and
# through the `tokscope template` command; model templates read from GGUF;
# bad input and hostile templates fail cleanly.
. tests/lib.sh
G="$TESTDATA/golden/chat"
BUILD=${BUILD:-build}
T="$OUT/chat"
mkdir -p "$T"

if need "$G/golden.jsonl" "chat golden data"; then
    # 1. API path: one ok/not ok per golden line + smoke renders
    if [ -x "$BUILD/tools/chat_golden" ]; then
        "$BUILD/tools/chat_golden" "$G"
    else
        not_ok "chat_golden tool" "missing $BUILD/tools/chat_golden"
    fi

    # 2. CLI path: split golden.jsonl into per-line files with python3
    rm -f "$T"/case_*
    python3 - "$G" "$T" <<'PY'
import json, sys
g, t = sys.argv[1], sys.argv[2]
for i, line in enumerate(open(g + "/golden.jsonl", encoding="utf-8")):
    d = json.loads(line)
    meta = json.load(open("%s/templates/%s.json" % (g, d["template"]), encoding="utf-8"))
    base = "%s/case_%03d" % (t, i)
    json.dump(d["messages"], open(base + ".msgs.json", "w", encoding="utf-8"), ensure_ascii=False)
    with open(base + ".args", "w", encoding="utf-8") as f:
        f.write("%s\n%s\n%s\n%s\n%s %s%s\n" % (d["template"], meta.get("bos_token") or "", meta.get("eos_token") or "",
                "gen" if d["add_generation_prompt"] else "nogen", d["template"], d["case"],
                "+gen" if d["add_generation_prompt"] else ""))
    if "error" in d:
        open(base + ".err", "w", encoding="utf-8").write(d["error"])
    else:
        open(base + ".want", "w", encoding="utf-8", newline="").write(d["output"])
PY
    for a in "$T"/case_*.args; do
        [ -f "$a" ] || { not_ok "chat cli: golden lines extracted"; break; }
        base=${a%.args}
        tmpl=$(sed -n 1p "$a"); bos=$(sed -n 2p "$a"); eos=$(sed -n 3p "$a"); gen=$(sed -n 4p "$a"); name=$(sed -n 5p "$a")
        genflag=""; [ "$gen" = nogen ] && genflag=--no-generation-prompt
        "$BIN" template --template "$G/templates/$tmpl.jinja" --bos "$bos" --eos "$eos" $genflag --date 2024-07-26 \
            "$base.msgs.json" >"$base.got" 2>"$base.stderr"
        rc=$?
        if [ -f "$base.err" ]; then
            want="tokscope: template error: $(cat "$base.err")"
            if [ $rc -eq 1 ] && [ "$(cat "$base.stderr")" = "$want" ] && [ ! -s "$base.got" ]; then
                ok "chat cli $name (error)"
            else
                not_ok "chat cli $name" "want: $want" "got rc=$rc: $(head -c 300 "$base.stderr")"
            fi
        elif [ $rc -eq 0 ] && cmp -s "$base.want" "$base.got"; then
            ok "chat cli $name"
        else
            not_ok "chat cli $name" "rc=$rc $(head -c 300 "$base.stderr")" "$(cmp "$base.want" "$base.got" 2>&1 | head -n 1)"
        fi
    done

    # 3. model templates straight from GGUF match the golden render of the same template
    printf '%s' '[{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "What is the capital of France?"}]' >"$T/caseB.json"
    for pair in "tiny-spm-f16:TinyLlama-1.1B-Chat-v1.0" "smollm-mini-q8_0:SmolLM2-135M-Instruct"; do
        m=${pair%%:*}; tn=${pair#*:}
        need "$TESTDATA/models/$m.gguf" "chat gguf $m" || continue
        python3 -c '
import json, sys
for l in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(l)
    if d["template"] == sys.argv[2] and d["case"] == "B" and d["add_generation_prompt"]:
        open(sys.argv[3], "w", encoding="utf-8", newline="").write(d["output"])
' "$G/golden.jsonl" "$tn" "$T/$m.want"
        if "$BIN" template -m "$TESTDATA/models/$m.gguf" --date 2024-07-26 "$T/caseB.json" >"$T/$m.got" 2>"$T/$m.stderr" &&
            cmp -s "$T/$m.want" "$T/$m.got"; then
            ok "chat gguf $m template + bos/eos from the model"
        else
            not_ok "chat gguf $m template + bos/eos from the model" "$(head -c 300 "$T/$m.stderr")" "$(cmp "$T/$m.want" "$T/$m.got" 2>&1)"
        fi
    done
fi

# 2026 templates (Qwen3.5, Gemma 4 and its interleaved variant, gpt-oss):
# every line of golden2026.jsonl byte for byte, with its template variables
# (enable_thinking, reasoning_effort) and messages carrying reasoning_content /
# thinking; then the CLI's --var: the rendered prompt changes with thinking
# on/off and the effort, as the templates say.
G26="$TESTDATA/families2026/golden/chat"
if need "$G26/golden2026.jsonl" "chat 2026 golden data"; then
    if [ -x "$BUILD/tools/chat_golden" ]; then
        "$BUILD/tools/chat_golden" "$G26" golden2026.jsonl tests/golden/chat/templates2026
    else
        not_ok "chat_golden tool (2026)" "missing $BUILD/tools/chat_golden"
    fi
    printf '%s' '[{"role": "user", "content": "Hi"}]' >"$T/hi.json"
    t26() { t26n=$1; shift; "$BIN" template --template "$G26/templates/$t26n.jinja" --date 2024-07-26 "$@" "$T/hi.json" 2>&1; }
    check_tail() { # name, wanted ending (printf format); the render in $T/t26.out
        printf "$2" >"$T/t26.want"
        if tail -c "$(wc -c <"$T/t26.want")" "$T/t26.out" | cmp -s - "$T/t26.want"; then ok "$1"
        else not_ok "$1" "want ...$(od -c "$T/t26.want" | head -2 | tr '\n' ' ')" "got ...$(tail -c 40 "$T/t26.out" | od -c | head -3 | tr '\n' ' ')"; fi
    }
    nl='
'
    t26 Qwen3.5-4B >"$T/t26.out"; check_tail "chat --var Qwen3.5 thinking by default" '<think>\n'
    t26 Qwen3.5-4B --var enable_thinking=false >"$T/t26.out"; check_tail "chat --var Qwen3.5 enable_thinking=false" '<think>\n\n</think>\n\n'
    t26 Qwen3.5-4B --var enable_thinking=true >"$T/t26.out"; check_tail "chat --var Qwen3.5 enable_thinking=true" 'assistant\n<think>\n'
    t26 google-gemma-4-31B-it >"$T/t26.out"; check_tail "chat --var Gemma 4 no thinking by default" '<|turn>model\n<|channel>thought\n<channel|>'
    t26 google-gemma-4-31B-it --var enable_thinking=true >"$T/t26.out"; check_tail "chat --var Gemma 4 enable_thinking=true" 'Hi<turn|>\n<|turn>model\n'
    g=$(cat "$T/t26.out")
    case "$g" in *"<|think|>"*) ok "chat --var Gemma 4 thinking token in the system turn" ;; *) not_ok "chat --var Gemma 4 thinking token in the system turn" "$g" ;; esac
    for e in low medium high; do
        o=$(t26 openai-gpt-oss-120b --var reasoning_effort=$e)
        case "$o" in *"Reasoning: $e$nl"*) ok "chat --var gpt-oss reasoning_effort=$e" ;; *) not_ok "chat --var gpt-oss reasoning_effort=$e" "$o" ;; esac
    done
    o=$(t26 openai-gpt-oss-120b --var reasoning_effort='"high"' --var enable_thinking=false)
    case "$o" in *"Reasoning: high$nl"*) ok "chat --var JSON values" ;; *) not_ok "chat --var JSON values" "$o" ;; esac
    # Jinja2 itself on conversations whose reasoning the templates render
    # (an assistant turn after the last user one, tool calls) and with
    # template variables
    python3 tests/tools/jinja_reference.py "$BIN" "$G26/templates:tests/golden/chat/templates2026" \
        tests/golden/chat/conversations2026.json
    "$BIN" template --builtin chatml --var nonsense "$T/hi.json" >/dev/null 2>"$T/var.err"; rc=$?
    if [ $rc -eq 2 ] && grep -q "NAME=VALUE" "$T/var.err"; then ok "chat --var without =: usage error"; else not_ok "chat --var without =: usage error" "rc=$rc $(cat "$T/var.err")"; fi
fi

# 4. bad input: clear error, exit 1, no crash
printf '[{"role": "user", "content": "hi"}' >"$T/bad.json"
"$BIN" template --builtin chatml "$T/bad.json" >/dev/null 2>"$T/bad.err"; rc=$?
if [ $rc -eq 1 ] && grep -q "not valid JSON" "$T/bad.err"; then ok "chat cli invalid JSON"; else not_ok "chat cli invalid JSON" "rc=$rc $(cat "$T/bad.err")"; fi
"$BIN" template --builtin chatml "$T/does-not-exist.json" >/dev/null 2>"$T/bad.err"; rc=$?
if [ $rc -eq 1 ] && grep -q "cannot open" "$T/bad.err"; then ok "chat cli missing file"; else not_ok "chat cli missing file" "rc=$rc $(cat "$T/bad.err")"; fi
printf '{"messages": 3}' >"$T/bad2.json"
"$BIN" template --builtin chatml "$T/bad2.json" >/dev/null 2>"$T/bad.err"; rc=$?
if [ $rc -eq 1 ] && grep -q "array of messages" "$T/bad.err"; then ok "chat cli messages not an array"; else not_ok "chat cli messages not an array" "rc=$rc $(cat "$T/bad.err")"; fi
printf '{"messages": [{"role": "user", "content": "hi"}]}' >"$T/obj.json"
if [ "$("$BIN" template --builtin chatml --no-generation-prompt "$T/obj.json")" = "$(printf '<|im_start|>user\nhi<|im_end|>')" ]; then
    ok "chat cli messages object + builtin chatml"
else
    not_ok "chat cli messages object + builtin chatml"
fi

# 5. hostile templates end with an error, not a hang or a crash
i=0
for src in '{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}' \
           '{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}' \
           '{% set ns = namespace(s="xxxxxxxxxxxxxxxx") %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}' \
           '{{ "a" * 10000000000 }}' \
           "$(python3 -c 'print("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}")')" \
           '{% for x in messages %}{{ x.content.foo.bar }}{% endfor %}' \
           '{{ 1 +  }}' '{% if %}' '{% for x in y %}' '{{ "unterminated }}' '{% endif %}' '{% include "x" %}'; do
    i=$((i + 1))
    printf '%s' "$src" >"$T/hostile$i.jinja"
    timeout 60 "$BIN" template --template "$T/hostile$i.jinja" "$T/obj.json" >/dev/null 2>"$T/hostile$i.err"; rc=$?
    if [ $rc -eq 1 ] && grep -q "tokscope: template" "$T/hostile$i.err"; then
        ok "chat hostile template $i fails cleanly"
    else
        not_ok "chat hostile template $i fails cleanly" "rc=$rc $(head -c 200 "$T/hostile$i.err")"
    fi
done
# syntax errors name line:column
printf 'line one\n{%% if x %%}\n  {{ 1 + }}\n{%% endif %%}' >"$T/pos.jinja"
"$BIN" template --template "$T/pos.jinja" "$T/obj.json" >/dev/null 2>"$T/pos.err"
if grep -q "pos.jinja:3:10" "$T/pos.err" && grep -q "^tokscope: template error: unexpected '}}'" "$T/pos.err"; then
    ok "chat error names line:column"
else
    not_ok "chat error names line:column" "$(cat "$T/pos.err")"
fi

# 4. Jinja2 itself as the reference, on more conversations than the golden
#    file has: a system prompt with several turns, assistant messages with
#    <think> reasoning (Qwen3 drops it from earlier turns), tool calls and a
#    tool result, five turns; every shared template, with and without the
#    generation prompt (tests/golden/chat/conversations.json).
if need "$G/templates/Qwen3.jinja" "chat vs Jinja2"; then
    python3 tests/tools/jinja_reference.py "$BIN" "$G/templates" tests/golden/chat/conversations.json
fi
