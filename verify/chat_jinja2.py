#!/usr/bin/env python3
"""The second outside reference for runtime/text/chat.cc: renders verify/data/chat_templates.json with
Python's jinja2 the way Hugging Face transformers' apply_chat_template does (an immutable sandboxed
environment with trim_blocks and lstrip_blocks, raise_exception, the tojson filter, strftime_now
fixed to the file's `today`), for every template whose format is known, conversation and
add_generation_prompt (0, 1, and 2 = add_generation_prompt with enable_thinking = false for templates
that have that switch: Qwen3), and checks that verify/data/chat_expected.txt (what the Catch2 cases
chat.render compare ml::chat_render with; written from @huggingface/jinja by verify/chat_oracle.js)
holds exactly these texts: a second outside witness (ctest chat.jinja2). For a template that
@huggingface/jinja cannot parse (`js_engine_fails` in chat_templates.json: Qwen3's), chat_oracle.js
writes this script's renderings (--print), so jinja2 is the one witness there.

  chat_jinja2.py          check, one line of result (exit 1 naming the first difference)
  chat_jinja2.py --print  print one JSON line per rendering instead

jinja2: Debian's python3-jinja2; without it in this interpreter, the python3 on PATH is tried; exit
77 when neither has it.
"""
import json
import os
import shutil
import subprocess
import sys

try:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    other = shutil.which("python3")
    if other and os.path.realpath(other) != os.path.realpath(sys.executable) and not os.environ.get("CHAT_JINJA2_REEXEC"):
        env = dict(os.environ, CHAT_JINJA2_REEXEC="1")
        sys.exit(subprocess.run([other, os.path.abspath(__file__)] + sys.argv[1:], env=env).returncode)
    sys.stderr.write("chat_jinja2.py: no jinja2 for %s (Debian: python3-jinja2)\n" % sys.executable)
    sys.exit(77)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def unesc(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def expected(path):
    """{(template, conversation, gen): ("want", text) | ("error", None)} of chat_expected.txt."""
    out, tmpl, case = {}, None, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, rest = line.rstrip("\n").partition(" ")
            if key == "template":
                tmpl = rest.split(" ")[0]
            elif key == "case":
                gen, _, name = rest.split(" ", 2)
                case = (tmpl, name, int(gen))
            elif key in ("want", "error"):
                out[case] = (key, unesc(rest) if key == "want" else None)
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    rows = list(render(here))
    if sys.argv[1:] == ["--print"]:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
        return 0
    exp = expected(os.path.join(here, "data", "chat_expected.txt"))
    for row in rows:
        key = (row["template"], row["conversation"], row["gen"])
        got = ("want", row["want"]) if "want" in row else ("error", None)
        if exp.get(key) != got:
            print("chat_jinja2.py: %s differs from verify/data/chat_expected.txt:\n  jinja2:   %r\n  expected: %r"
                  % (key, got, exp.get(key)))
            return 1
    if len(rows) < 150 or len(rows) != len(exp):
        print("chat_jinja2.py: %d renderings here, %d in chat_expected.txt" % (len(rows), len(exp)))
        return 1
    print("chat_jinja2.py: jinja2 %s renders all %d cases of verify/data/chat_expected.txt as it holds them"
          % (jinja2.__version__, len(rows)))
    return 0


def render(here):
    with open(os.path.join(here, "data", "chat_templates.json"), encoding="utf-8") as f:
        doc = json.load(f)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: doc["today"]  # transformers' clock, fixed
    for name, t in doc["templates"].items():
        if t["format"] == "unknown":
            continue
        tmpl = env.from_string(t["source"])
        for conv in doc["conversations"]:
            messages = [{"role": r, "content": c} for r, c in conv["messages"]]
            for gen in (0, 1, 2) if "enable_thinking" in t["source"] else (0, 1):
                row = {"template": name, "conversation": conv["name"], "gen": gen}
                extra = {"enable_thinking": False} if gen == 2 else {}
                try:
                    row["want"] = tmpl.render(messages=messages, add_generation_prompt=bool(gen),
                                              bos_token=t["bos"], eos_token=t["eos"], **extra)
                except jinja2.exceptions.TemplateError as e:
                    row["error"] = str(e)
                yield row


if __name__ == "__main__":
    sys.exit(main())
