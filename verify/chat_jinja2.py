#!/usr/bin/env python3
"""The second outside reference for runtime/chat.cc: renders verify/data/chat_templates.json with
Python's jinja2 the way Hugging Face transformers' apply_chat_template does (an immutable sandboxed
environment with trim_blocks and lstrip_blocks, raise_exception, the tojson filter) and prints, for
every template whose format is known, conversation and add_generation_prompt, one JSON line:
  {"template": NAME, "conversation": NAME, "gen": 0|1, "want": TEXT} or {..., "error": MESSAGE}
verify/tests/test_chat.py compares these with verify/data/chat_expected.txt (written from
@huggingface/jinja by verify/chat_oracle.js). Any python3 with jinja2 (Debian: python3-jinja2); exit 77
without jinja2.
"""
import json
import os
import sys

try:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("chat_jinja2.py: no jinja2 for %s (Debian: python3-jinja2)\n" % sys.executable)
    sys.exit(77)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
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
            for gen in (0, 1):
                row = {"template": name, "conversation": conv["name"], "gen": gen}
                try:
                    row["want"] = tmpl.render(messages=messages, add_generation_prompt=bool(gen),
                                              bos_token=t["bos"], eos_token=t["eos"])
                except jinja2.exceptions.TemplateError as e:
                    row["error"] = str(e)
                print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
