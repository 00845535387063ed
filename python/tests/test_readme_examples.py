"""llama-cpp-python's README examples (high-level completion, streaming, chat completion, JSON mode, JSON
schema mode), written out as that README has them, run unchanged against legacy_ml: only the model
path is swapped ("./models/7B/llama-model.gguf" -> stories260K.gguf; the chatml examples -> a random
ChatML model with a real Qwen2.5 template). `llama_cpp` is this package for the duration of the test
(sys.modules), so `from llama_cpp import Llama` stays as written. Each example's value (its last
expression) is checked for the OpenAI shape llama-cpp-python returns."""
import ast
import contextlib
import io
import json
import sys

import pytest

import legacy_ml

from common import STORIES_GGUF
from test_binding import need_shared

COMPLETION = '''
from llama_cpp import Llama

llm = Llama(
      model_path="./models/7B/llama-model.gguf",
      # n_gpu_layers=-1, # Uncomment to use GPU acceleration
      # seed=1337, # Uncomment to set a specific seed
      # n_ctx=2048, # Uncomment to increase the context window
)
output = llm(
      "Q: Name the planets in the solar system? A: ", # Prompt
      max_tokens=32, # Generate up to 32 tokens, set to None to generate up to the end of the context window
      stop=["Q:", "\\n"], # Stop generating just before the model would generate a new question
      echo=True # Echo the prompt back in the output
) # Generate a completion, can also call create_completion
print(output)
'''

STREAMING = '''
from llama_cpp import Llama

llm = Llama(model_path="./models/7B/llama-model.gguf")
for output in llm("Q: Name the planets in the solar system? A: ", max_tokens=32, stream=True):
    print(output["choices"][0]["text"], end="", flush=True)
'''

CHAT = '''
from llama_cpp import Llama
llm = Llama(
      model_path="path/to/llama-2/llama-model.gguf",
      chat_format="llama-2"
)
llm.create_chat_completion(
      messages = [
          {"role": "system", "content": "You are an assistant who perfectly describes images."},
          {
              "role": "user",
              "content": "Describe this image in detail please."
          }
      ]
)
'''

JSON_MODE = '''
from llama_cpp import Llama
llm = Llama(model_path="path/to/model.gguf", chat_format="chatml")
llm.create_chat_completion(
    messages=[
        {
            "role": "system",
            "content": "You are a helpful assistant that outputs in JSON.",
        },
        {"role": "user", "content": "Who won the world series in 2020"},
    ],
    response_format={
        "type": "json_object",
    },
    temperature=0.7,
)
'''

JSON_SCHEMA = '''
from llama_cpp import Llama
llm = Llama(model_path="path/to/model.gguf", chat_format="chatml")
llm.create_chat_completion(
    messages=[
        {
            "role": "system",
            "content": "You are a helpful assistant that outputs in JSON.",
        },
        {"role": "user", "content": "Who won the world series in 2020"},
    ],
    response_format={
        "type": "json_object",
        "schema": {
            "type": "object",
            "properties": {"team_name": {"type": "string"}},
            "required": ["team_name"],
        },
    },
    temperature=0.7,
)
'''


def run_example(source, old_path, new_path):
    """Runs the example with the model path swapped; returns (its namespace, the last expression's
    value, what it printed)."""
    assert source.count(old_path) == 1
    tree = ast.parse(source.replace(old_path, new_path))
    last = None
    if isinstance(tree.body[-1], ast.Expr):
        tree.body[-1] = ast.Assign(targets=[ast.Name(id="_last", ctx=ast.Store())], value=tree.body[-1].value)
        ast.fix_missing_locations(tree)
    ns = {}
    out = io.StringIO()
    saved = sys.modules.get("llama_cpp")
    sys.modules["llama_cpp"] = legacy_ml
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(tree, "<README example>", "exec"), ns)
    finally:
        if saved is None:
            del sys.modules["llama_cpp"]
        else:
            sys.modules["llama_cpp"] = saved
    last = ns.get("_last")
    return ns, last, out.getvalue()


@pytest.fixture(scope="module")
def chatml_path(chatml):
    return chatml[0]


def check_chat(result, json_mode=False):
    assert result["object"] == "chat.completion" and result["id"].startswith("chatcmpl-")
    choice = result["choices"][0]
    assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)
    assert choice["finish_reason"] in ("stop", "length")
    u = result["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] and u["prompt_tokens"] > 0
    if json_mode and choice["finish_reason"] == "stop":
        return json.loads(choice["message"]["content"])
    return None


def test_high_level_completion():
    need_shared()
    ns, _, printed = run_example(COMPLETION, "./models/7B/llama-model.gguf", STORIES_GGUF)
    out = ns["output"]
    assert out["object"] == "text_completion" and out["id"].startswith("cmpl-")
    text = out["choices"][0]["text"]
    assert text.startswith("Q: Name the planets in the solar system? A: ")  # echo=True
    assert "\n" not in text and "Q:" not in text[3:]  # the stop strings
    assert out["choices"][0]["finish_reason"] in ("stop", "length")
    assert out["usage"]["completion_tokens"] <= 32
    assert printed.startswith("{'id': 'cmpl-")


def test_streaming():
    need_shared()
    ns, _, printed = run_example(STREAMING, "./models/7B/llama-model.gguf", STORIES_GGUF)
    whole = ns["llm"]("Q: Name the planets in the solar system? A: ", max_tokens=32, temperature=0)
    assert printed != "" and len(printed) <= 32 * 16
    assert ns["output"]["choices"][0]["finish_reason"] in ("stop", "length")
    assert isinstance(whole["choices"][0]["text"], str)


def test_chat_completion():
    need_shared()
    _, result, _ = run_example(CHAT, "path/to/llama-2/llama-model.gguf", STORIES_GGUF)
    check_chat(result)


def test_json_mode(chatml_path):
    _, result, _ = run_example(JSON_MODE, "path/to/model.gguf", chatml_path)
    value = check_chat(result, json_mode=True)
    if value is not None:
        assert isinstance(value, dict)
    else:
        assert result["choices"][0]["message"]["content"].startswith("{")


def test_json_schema_mode(chatml_path):
    _, result, _ = run_example(JSON_SCHEMA, "path/to/model.gguf", chatml_path)
    value = check_chat(result, json_mode=True)
    if value is not None:
        assert isinstance(value["team_name"], str)
    else:  # the context ran out (a random model; other properties are allowed): still an object's start
        assert result["choices"][0]["message"]["content"].startswith('{"')
