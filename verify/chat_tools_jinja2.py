#!/usr/bin/env python3
"""The outside reference for tool calls in chat templates (issue 34 item 4): renders the conversations
of verify/data/chat_tools_cases.json with Python's jinja2 on the real templates of
verify/data/chat_templates.json, as Hugging Face transformers' apply_chat_template does (the
environment of verify/chat_jinja2.py: sandboxed, trim_blocks, lstrip_blocks, tojson = json.dumps with
ensure_ascii=False, strftime_now fixed to the file's `today`), for add_generation_prompt 0 and 1.
A tool call's arguments (a JSON string in OpenAI's messages) are given to the template parsed, key
order kept, as ml_server gives them (the Qwen2.5 and Llama templates tojson them: a string would
render quoted).

  chat_tools_jinja2.py          check that verify/data/chat_tools_expected.json holds exactly these
                                renderings (ctest chat.tools.jinja2; exit 1 naming the first difference)
  chat_tools_jinja2.py --write  (re)write chat_tools_expected.json

Exit 77 when jinja2 is missing (Debian: python3-jinja2).
"""
import json
import os
import sys

try:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("chat_tools_jinja2.py: no jinja2 for %s (Debian: python3-jinja2)\n" % sys.executable)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def hf_messages(messages):
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [dict(c, function=dict(c["function"], arguments=json.loads(c["function"]["arguments"])))
                               for c in m["tool_calls"]]
        out.append(m)
    return out


def render():
    with open(os.path.join(HERE, "data", "chat_templates.json"), encoding="utf-8") as f:
        doc = json.load(f)
    with open(os.path.join(HERE, "data", "chat_tools_cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: doc["today"]
    rows = []
    for name in cases["templates"]:
        t = doc["templates"][name]
        tmpl = env.from_string(t["source"])
        for case in cases["cases"]:
            if "only" in case and name not in case["only"]:
                continue
            extra = {"tools": cases["tools"]} if case.get("tools") else {}
            for gen in (0, 1):
                row = {"template": name, "case": case["name"], "gen": gen}
                try:
                    row["want"] = tmpl.render(messages=hf_messages(case["messages"]), add_generation_prompt=bool(gen),
                                              bos_token=t["bos"], eos_token=t["eos"], **extra)
                except jinja2.exceptions.TemplateError as e:
                    row["error"] = str(e)
                rows.append(row)
    return rows


def main():
    rows = render()
    path = os.path.join(HERE, "data", "chat_tools_expected.json")
    if sys.argv[1:] == ["--write"]:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"_comment": "written by verify/chat_tools_jinja2.py --write (Python jinja2 %s); do not edit"
                       % jinja2.__version__, "rows": rows}, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print("chat_tools_jinja2.py: wrote %d renderings" % len(rows))
        return 0
    with open(path, encoding="utf-8") as f:
        have = json.load(f)["rows"]
    for got, want in zip(rows, have):
        if got != want:
            print("chat_tools_jinja2.py: %s / %s / %d differs from chat_tools_expected.json:\n  jinja2: %r\n  file:   %r"
                  % (got["template"], got["case"], got["gen"], got.get("want", got.get("error")),
                     want.get("want", want.get("error"))))
            return 1
    if len(rows) != len(have) or len(rows) < 60 or sum("error" in r for r in rows) < 4:
        print("chat_tools_jinja2.py: %d renderings here, %d in the file" % (len(rows), len(have)))
        return 1
    print("chat_tools_jinja2.py: jinja2 %s renders all %d cases of chat_tools_expected.json as it holds them"
          % (jinja2.__version__, len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
