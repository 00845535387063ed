"""legacy_ml against outside references (issue 37 item 3). Named cases:
  - golden: llama2.c run.c's greedy text for stories260K (/work/shared/golden) through Llama(...)(...)
    with echo, byte for byte, with 1 and 2 threads; the prompt's ids are run.c's;
  - streaming: the chunks join to the same text, one token's text each, the finish on the last;
  - stop strings end the text before them; max_tokens counts; logprobs name the chosen token;
  - chat: create_chat_completion on a ChatML model equals a completion over the conversation rendered
    by jinja2 from the real Qwen2.5 template (an outside renderer); streaming chat joins to the same;
  - JSON schema: the reply parses and validates (enum), finish "stop";
  - errors: a missing file (ML_E_IO, the path named), a file that is no model (ML_E_FORMAT), a bad
    argument (ML_E_ARG) -- each an MLError with the runtime's one line;
  - a second Llama in the same process, generations interleaved, both golden;
  - Python threads: three threads, each with its own Llama, generate the golden text at once;
  - a stream left unfinished refuses to go on once a newer generation started on its Llama;
  - garbage collection frees the model: RSS (/proc/self/statm) back down after the last reference
    (a reference cycle) is collected;
  - the build choice: info() names the preset's ISA and the launcher's reason; ML_ISA=nosuch refuses;
  - the library names per platform (_native.LIBRARY_NAMES): Windows' names (ml_<isa>.dll, the zip's wheel: verify/package_test.py) read as ISAs with
    the probe, mingw's import libraries and other platforms' files left out.
"""
import gc
import json
import os
import subprocess
import sys

import pytest

import legacy_ml
from legacy_ml import Llama, MLError

from common import GOLDEN, GOLDEN_IDS, STORIES_GGUF, rss_bytes

GOLDEN_STEPS = 196  # run.c -n 200 with a 5-token prompt: 200 positions, the last 196 sampled


def need_shared():
    if not os.path.exists(STORIES_GGUF) or not os.path.exists(GOLDEN):
        pytest.skip("shared data absent: %s" % STORIES_GGUF)


@pytest.fixture(scope="module")
def golden():
    need_shared()
    with open(GOLDEN, "rb") as f:
        return f.read().decode("utf-8")


@pytest.fixture(scope="module")
def stories():
    need_shared()
    llm = Llama(model_path=STORIES_GGUF, n_ctx=0, n_threads=1, seed=1, verbose=False)
    yield llm
    llm.close()


@pytest.fixture(scope="module")
def chat_model(chatml):
    path, template = chatml
    llm = Llama(model_path=path, n_ctx=512, n_threads=1, chat_format="chatml", verbose=False)
    yield llm, template
    llm.close()


def greedy(llm, **kw):
    return llm("Once upon a time", max_tokens=GOLDEN_STEPS, temperature=0, echo=True, **kw)


# ---- llama2.c's golden text ------------------------------------------------------------------

def test_golden_text_is_llama2c_byte_for_byte(stories, golden):
    out = greedy(stories)
    assert out["object"] == "text_completion"
    assert out["choices"][0]["text"] + "\n" == golden
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["usage"] == {"prompt_tokens": 5, "completion_tokens": GOLDEN_STEPS, "total_tokens": 5 + GOLDEN_STEPS}


def test_golden_with_one_and_two_threads(golden):
    need_shared()
    for t in (1, 2):
        with Llama(model_path=STORIES_GGUF, n_ctx=0, n_threads=t, verbose=False) as llm:
            assert llm.n_threads == t
            assert greedy(llm)["choices"][0]["text"] + "\n" == golden, "threads %d" % t


def test_tokenize_is_run_c_prompt_and_detokenize_inverts(stories):
    with open(GOLDEN_IDS) as f:
        ids = [int(x) for x in f.read().split()]
    toks = stories.tokenize(b"Once upon a time")
    assert toks == ids[:5] == [1, 403, 407, 261, 378]
    assert stories.tokenize(b"Once upon a time", add_bos=False) == ids[1:5]
    assert stories.detokenize(ids[1:5]) == b" Once upon a time"
    with pytest.raises(MLError) as e:
        stories.detokenize([512])
    assert e.value.status == 6 and "512" in str(e.value)


def test_prompt_as_ids_and_prefix_reuse_give_the_same_text(stories, golden):
    ids = stories.tokenize(b"Once upon a time")
    a = stories(ids, max_tokens=20, temperature=0)["choices"][0]["text"]
    b = stories(ids, max_tokens=20, temperature=0)["choices"][0]["text"]  # the prompt is in the KV cache now
    assert a == b and ("Once upon a time" + a) == golden[:len("Once upon a time" + a)]


def test_streaming_joins_to_the_whole_text(stories, golden):
    chunks = list(stories("Once upon a time", max_tokens=40, temperature=0, stream=True))
    texts = [c["choices"][0]["text"] for c in chunks]
    assert len(chunks) >= 20
    assert all(c["object"] == "text_completion" for c in chunks)
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert "Once upon a time" + "".join(texts) == golden[:len("Once upon a time" + "".join(texts))]
    assert len(set(c["id"] for c in chunks)) == 1
    echoed = list(stories("Once upon a time", max_tokens=5, temperature=0, stream=True, echo=True))
    assert echoed[0]["choices"][0]["text"] == "Once upon a time"


def test_stop_string_ends_before_it(stories, golden):
    out = stories("Once upon a time", max_tokens=GOLDEN_STEPS, temperature=0, stop=["Lily"])
    text = out["choices"][0]["text"]
    assert out["choices"][0]["finish_reason"] == "stop"
    assert golden.startswith("Once upon a time" + text + "Lily")
    assert "Lily" not in text


def test_logprobs_name_the_chosen_token(stories):
    out = stories("Once upon a time", max_tokens=4, temperature=0, logprobs=3)
    lp = out["choices"][0]["logprobs"]
    assert len(lp["tokens"]) == 4 == out["usage"]["completion_tokens"]
    for tok, chosen, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
        assert len(top) == 3 and chosen <= 0
        assert max(top.values()) == pytest.approx(chosen, abs=1e-6)  # greedy: the chosen is the most likely
        assert tok in top
    assert "".join(lp["tokens"]) == out["choices"][0]["text"]


def test_sampling_with_a_seed_repeats(stories):
    a = stories("Once upon a time", max_tokens=30, temperature=0.9, top_k=20, min_p=0.05, repeat_penalty=1.1, seed=42)
    b = stories("Once upon a time", max_tokens=30, temperature=0.9, top_k=20, min_p=0.05, repeat_penalty=1.1, seed=42)
    c = stories("Once upon a time", max_tokens=30, temperature=0.9, top_k=20, min_p=0.05, repeat_penalty=1.1, seed=43)
    assert a["choices"][0]["text"] == b["choices"][0]["text"]
    assert a["choices"][0]["text"] != c["choices"][0]["text"]


# ---- chat and JSON ---------------------------------------------------------------------------

def jinja_render(template, messages):
    import jinja2  # Debian's python3-jinja2: the outside renderer
    env = jinja2.Environment(trim_blocks=False, lstrip_blocks=False)
    return env.from_string(template).render(messages=messages, add_generation_prompt=True, bos_token="",
                                            eos_token="<|endoftext|>")


def test_chat_equals_a_completion_over_the_jinja2_rendering(chat_model):
    llm, template = chat_model
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is two plus two?"}]
    out = llm.create_chat_completion(messages=messages, temperature=0, max_tokens=12, logprobs=True, top_logprobs=1)
    assert out["object"] == "chat.completion"
    msg = out["choices"][0]["message"]
    assert msg["role"] == "assistant"
    ids = llm.tokenize(jinja_render(template, messages).encode(), add_bos=False, special=True)
    assert out["usage"]["prompt_tokens"] == len(ids)
    ref = llm(ids, max_tokens=12, temperature=0, logprobs=1)
    assert msg["content"] == ref["choices"][0]["text"]
    # token for token (a random model's reply may be control bytes, which the text stream drops)
    got = [(c["token"], c["logprob"]) for c in out["choices"][0]["logprobs"]["content"]]
    want = list(zip(ref["choices"][0]["logprobs"]["tokens"], ref["choices"][0]["logprobs"]["token_logprobs"]))
    assert got == want and len(got) == out["usage"]["completion_tokens"] > 0
    chunks = list(llm.create_chat_completion(messages=messages, temperature=0, max_tokens=12, stream=True))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == msg["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == out["choices"][0]["finish_reason"]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)


def test_json_schema_reply_parses_and_validates(chat_model):
    llm, _ = chat_model
    schema = {"type": "object", "properties": {"team_name": {"enum": ["Dodgers", "Rays"]}},
              "required": ["team_name"], "additionalProperties": False}
    for seed in (1, 2, 3):
        out = llm.create_chat_completion(messages=[{"role": "user", "content": "Who won the world series in 2020"}],
                                         response_format={"type": "json_object", "schema": schema},
                                         temperature=0.7, seed=seed)
        assert out["choices"][0]["finish_reason"] == "stop"
        assert json.loads(out["choices"][0]["message"]["content"])["team_name"] in ("Dodgers", "Rays")


def test_bad_schema_and_chat_format_are_one_line_errors(chat_model):
    llm, _ = chat_model
    with pytest.raises(MLError) as e:
        llm.create_chat_completion(messages=[{"role": "user", "content": "hi"}],
                                   response_format={"type": "json_object", "schema": {"type": "string", "pattern": "x"}})
    assert "pattern" in e.value.message and "\n" not in str(e.value)
    with pytest.raises(MLError) as e:
        llm.create_chat_completion(messages=[{"role": "wizard", "content": "hi"}])
    assert e.value.status == 6 and "\n" not in str(e.value)
    need_shared()
    with pytest.raises(MLError) as e:  # a llama2.c tokenizer has no <|im_start|>
        Llama(model_path=STORIES_GGUF, chat_format="chatml", verbose=False)
    assert e.value.status_name == "ML_E_FORMAT" and "<|im_" in e.value.message


def test_zephyr_chat_on_a_llama2c_tokenizer(stories):
    need_shared()
    with Llama(model_path=STORIES_GGUF, chat_format="zephyr", n_threads=1, verbose=False) as llm:
        out = llm.create_chat_completion(messages=[{"role": "user", "content": "Once upon a time"}], max_tokens=8,
                                         temperature=0)
        assert out["usage"]["completion_tokens"] <= 8 and out["usage"]["prompt_tokens"] > 5


# ---- errors ----------------------------------------------------------------------------------

def test_missing_model_file():
    with pytest.raises(MLError) as e:
        Llama(model_path="/nonexistent/model.gguf", verbose=False)
    assert e.value.status == 1 and e.value.status_name == "ML_E_IO"
    assert "/nonexistent/model.gguf" in e.value.message and "\n" not in e.value.message


def test_wrong_model_file(tmp_path):
    p = tmp_path / "notes.gguf"
    p.write_bytes(b"this is not a model file at all, just some text\n" * 10)
    with pytest.raises(MLError) as e:
        Llama(model_path=str(p), verbose=False)
    assert e.value.status_name == "ML_E_FORMAT", str(e.value)
    assert e.value.message and "\n" not in e.value.message


def test_bad_arguments(stories):
    with pytest.raises(MLError) as e:
        Llama(model_path=STORIES_GGUF, n_threads=-3, verbose=False)
    assert e.value.status == 6 and "thread" in e.value.message
    with pytest.raises(MLError) as e:
        stories("Once upon a time " * (stories.n_ctx() // 4 + 1), max_tokens=4)
    assert e.value.status == 6 and "context" in e.value.message
    with pytest.raises(MLError):
        stories("x", logprobs=21)


# ---- processes, memory, the build ------------------------------------------------------------

def test_two_models_in_one_process_interleaved(golden):
    need_shared()
    a = Llama(model_path=STORIES_GGUF, n_ctx=0, n_threads=1, verbose=False)
    b = Llama(model_path=STORIES_GGUF, n_ctx=0, n_threads=2, verbose=False)
    sa = a("Once upon a time", max_tokens=GOLDEN_STEPS, temperature=0, stream=True, echo=True)
    sb = b("Once upon a time", max_tokens=GOLDEN_STEPS, temperature=0, stream=True, echo=True)
    ta, tb = [], []
    for ca, cb in zip(sa, sb):
        ta.append(ca["choices"][0]["text"])
        tb.append(cb["choices"][0]["text"])
    ta += [c["choices"][0]["text"] for c in sa]
    tb += [c["choices"][0]["text"] for c in sb]
    assert "".join(ta) + "\n" == golden == "".join(tb) + "\n"
    a.close()
    assert greedy(b)["choices"][0]["text"] + "\n" == golden  # closing one leaves the other working
    with pytest.raises(MLError):
        a("Once")


def test_garbage_collection_frees_the_model(tmp_path):
    # A random model of about 30 MB (Q8_0), its pages touched by a generation, in a reference cycle.
    from common import PY, SOURCE
    big = str(tmp_path / "big.mlb")
    subprocess.run([PY, os.path.join(SOURCE, "tools", "gen_random.py"), big, "--dim", "768", "--hidden", "2048",
                    "--layers", "4", "--heads", "8", "--kv-heads", "8", "--vocab", "512", "--seq", "64", "--wtype",
                    "q8_0", "-q"], check=True, timeout=300)
    size = os.path.getsize(big)
    assert size > 25 << 20
    tok = os.path.join(os.path.dirname(STORIES_GGUF), "tok512.bin")
    if not os.path.exists(tok):
        pytest.skip("shared data absent: " + tok)
    gc.collect()
    before = rss_bytes()
    llm = Llama(model_path=big, tokenizer_path=tok, n_threads=1, verbose=False)
    llm("Once", max_tokens=2, temperature=0)
    llm.self_reference = llm  # only the cycle collector can free it
    loaded = rss_bytes()
    assert loaded - before > size * 0.8, "the model's pages are resident while it is open"
    del llm
    gc.collect()
    after = rss_bytes()
    assert after - before < size * 0.1, "RSS before %d, loaded %d, after collection %d" % (before, loaded, after)


def test_info_names_the_build_and_why():
    i = legacy_ml.info()
    want = os.environ.get("ML_BUILD_ISA")
    if want:
        assert i["isa"] == want
    assert i["why"].startswith(i["isa"] + " (")
    assert i["isa"] in i["installed"] and i["arch"] in ("x86_64", "aarch64", "armv7", "riscv64")
    assert os.path.basename(i["library"]) == "libml_%s.so" % i["isa"]


def test_library_names_per_platform():
    from legacy_ml import _native as N
    assert (N.ISA_LIBRARY, N.PROBE_LIBRARY) == N.LIBRARY_NAMES["posix"]  # the table in effect here
    files = ["ml_avx512vnni.dll", "ml_probe.dll", "ml_sse2.dll", "ml_avx2.dll", "libml_sse2.dll.a", "ml_.dll",
             "libml_avx2.so", "libml_probe.so", "ml_sse2.def"]
    assert N.installed_isas(files, *N.LIBRARY_NAMES["nt"]) == ["avx2", "avx512vnni", "sse2"]
    assert N.installed_isas(files, *N.LIBRARY_NAMES["posix"]) == ["avx2"]


def test_ml_isa_is_honoured():
    code = ("import legacy_ml\n"
            "try:\n    legacy_ml.info()\nexcept legacy_ml.MLError as e:\n    print(e.status, e.message)\n")
    env = dict(os.environ, ML_ISA="nosuch")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.stdout.startswith("6 legacy_ml: ML_ISA=nosuch: no such build"), r.stdout + r.stderr
    isa = legacy_ml.info()["isa"]
    env["ML_ISA"] = isa.replace("_", "-")
    r = subprocess.run([sys.executable, "-c", "import legacy_ml; print(legacy_ml.info()['why'])"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "%s (forced by ML_ISA; this CPU runs it)" % isa, r.stdout + r.stderr


def test_an_older_stream_stops_when_a_new_generation_starts(stories, golden):
    old = stories("Once upon a time", max_tokens=30, temperature=0, stream=True)
    next(old)
    assert greedy(stories)["choices"][0]["text"] + "\n" == golden  # the new one is not disturbed
    with pytest.raises(MLError) as e:
        list(old)
    assert e.value.status == 6 and "another generation" in e.value.message


def test_python_threads_each_with_a_model(golden):
    # ctypes releases the GIL in each C call: two Llama objects generate at once from two threads
    # (one Llama is one sequence, like llama-cpp-python's: share none between threads).
    import threading
    need_shared()
    texts, errors = {}, []

    def work(k):
        try:
            with Llama(model_path=STORIES_GGUF, n_ctx=0, n_threads=1, verbose=False) as llm:
                texts[k] = greedy(llm)["choices"][0]["text"] + "\n"
        except Exception as e:  # reported below, in the main thread
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors and texts == {0: golden, 1: golden, 2: golden}
