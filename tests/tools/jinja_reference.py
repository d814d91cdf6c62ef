#!/usr/bin/env python3
"""Renders chat templates with Jinja2 itself, set up the way Hugging Face
transformers renders chat templates (trim_blocks, lstrip_blocks, the
loopcontrols extension, a sandbox, raise_exception, strftime_now on the
fixed date 2024-07-26, tojson without ASCII escaping), and checks that
`tokscope template` renders every conversation of CONVERSATIONS.json the
same way, byte for byte, or fails with the same message.

  jinja_reference.py TOKSCOPE TEMPLATE_DIR[:MORE_DIR...] CONVERSATIONS.json

Every DIR's NAME.jinja is a template; NAME.json (in any of the dirs, else
none: no BOS/EOS text) gives its bos_token/eos_token. A conversation is a
list of messages, or {"messages": [...], "vars": {...}}: template variables
(enable_thinking, reasoning_effort) passed as keyword arguments, and to
tokscope as the messages file's other keys.

Prints one "ok - ..." / "not ok - ..." line per template, conversation and
add_generation_prompt value (tests/run.sh counts them)."""
import datetime
import json
import os
import subprocess
import sys
import tempfile

try:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("not ok - chat vs Jinja2: python3 cannot import jinja2 (Debian package python3-jinja2)")
    sys.exit(0)


def render(src, messages, bos, eos, gen, tvars):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime(2024, 7, 26).strftime(fmt)
    return env.from_string(src).render(messages=messages, bos_token=bos, eos_token=eos, add_generation_prompt=gen,
                                     **tvars)


def main():
    binary, tdirs, conv_path = sys.argv[1:4]
    convs = json.load(open(conv_path, encoding="utf-8"))
    tdirs = tdirs.split(":")
    names = sorted((f[:-6], d) for d in tdirs for f in os.listdir(d) if f.endswith(".jinja"))
    work = tempfile.mkdtemp()
    msgs_path = os.path.join(work, "messages.json")
    for t, tdir in names:
        meta = {}
        for d in tdirs:
            if os.path.exists(os.path.join(d, t + ".json")):
                meta = json.load(open(os.path.join(d, t + ".json"), encoding="utf-8"))
                break
        src = open(os.path.join(tdir, t + ".jinja"), encoding="utf-8").read()
        bos, eos = meta.get("bos_token") or "", meta.get("eos_token") or ""
        for cname, conv in convs.items():
            msgs, tvars = (conv["messages"], conv.get("vars", {})) if isinstance(conv, dict) else (conv, {})
            with open(msgs_path, "w", encoding="utf-8") as f:
                json.dump(dict(tvars, messages=msgs) if tvars else msgs, f, ensure_ascii=False)
            for gen in (True, False):
                name = "chat vs Jinja2: %s %s%s" % (t, cname, " +gen" if gen else "")
                other = None
                try:
                    want, err = render(src, msgs, bos, eos, gen, tvars), None
                except jinja2.exceptions.TemplateError as e:
                    want, err = None, str(e)
                except Exception as e:  # a Python error inside Jinja2 (undefined | tojson): no message to match
                    want, err, other = None, None, "%s: %s" % (type(e).__name__, e)
                cmd = [binary, "template", "--template", os.path.join(tdir, t + ".jinja"), "--bos", bos, "--eos", eos,
                       "--date", "2024-07-26"] + ([] if gen else ["--no-generation-prompt"]) + [msgs_path]
                r = subprocess.run(cmd, capture_output=True)
                got, stderr = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace").strip()
                if other is not None and r.returncode == 1 and not got:
                    print("ok - %s (both fail; Jinja2: %s)" % (name, other))
                elif other is None and err is None and r.returncode == 0 and got == want:
                    print("ok - " + name)
                elif err is not None and r.returncode == 1 and stderr == "tokscope: template error: " + err:
                    print("ok - %s (error: %s)" % (name, err))
                else:
                    print("not ok - " + name)
                    print("#   want: " + (other or (repr(want)[:300] if err is None else "error: " + err)))
                    print("#   got (exit %d): %s %s" % (r.returncode, repr(got)[:300], stderr[:200]))


main()
