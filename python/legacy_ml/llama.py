"""``Llama``: llama-cpp-python's high-level API over legacy-ml's C API.

Generation goes through one session (``ml_session_*``, runtime/ml.h): the prompt (its common prefix
with the previous call stays in the KV cache), the sampler chain (``ml_sampling``), stop ids and
strings, logprobs and a JSON-schema constraint (structured/ml_structured.h) in one token-choice step.
Chats are rendered and encoded by the runtime's chat API (runtime/chat_api.cc). Results are the
OpenAI-shaped dicts llama-cpp-python returns; ``stream=True`` gives an iterator of chunks.
"""

import ctypes
import json
import os
import random
import time
import uuid
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_void_p
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _native as N
from ._native import MLError

LLAMA_DEFAULT_SEED = 0xFFFFFFFF  # llama-cpp-python's "random seed"

# llama-cpp-python's chat_format names for the formats the runtime renders (runtime/text/chat.h), and ours.
CHAT_FORMATS = {"chatml": "chatml", "qwen": "chatml", "zephyr": "zephyr", "llama-2": "llama2", "llama2": "llama2",
                "llama-3": "llama3", "llama3": "llama3", "qwen3": "qwen3"}

Completion = Dict[str, Any]


def _cstr(s: str, what: str) -> bytes:
    b = s.encode("utf-8")
    if b"\0" in b:
        raise MLError(6, "%s holds a NUL character" % what)
    return b


class Llama:
    """A model, its tokenizer, one KV cache and one generation session.

    ``Llama(model_path, n_ctx=512, n_threads=None, seed=LLAMA_DEFAULT_SEED, chat_format=None,
    verbose=True)`` as llama-cpp-python (``n_threads`` None: half the CPUs, as there); besides: ``tokenizer_path`` (a .mlb model's tokenizer file;
    GGUF files carry theirs), ``n_batch`` (prompt tokens per evaluation), ``n_gpu_layers`` (accepted
    for scripts written for llama-cpp-python; this runtime has no GPU, so only 0 and -1 mean
    anything: both run on the CPU), ``use_mmap`` (True: the weights read through the file's mapping,
    ml_options.map_weights; None or False: copied into huge pages where the system has them, which
    decodes faster). ``n_ctx=0``: the model's context. Failures raise
    :class:`MLError` with the runtime's one-line message and status.
    """

    def __init__(self, model_path: str, *, n_ctx: int = 512, n_threads: Optional[int] = None,
                 seed: int = LLAMA_DEFAULT_SEED, chat_format: Optional[str] = None, verbose: bool = True,
                 n_batch: int = 64, tokenizer_path: Optional[str] = None, n_gpu_layers: int = 0,
                 use_mmap: Optional[bool] = None) -> None:
        self._lib = None
        self._ctx = c_void_p()
        self._session = c_void_p()
        self._vocab = c_void_p()
        self._generation = 0  # the session's current generation; an older stream may not go on
        if n_gpu_layers not in (0, -1):
            raise MLError(6, "n_gpu_layers %d: this runtime has no GPU (0 or -1: the CPU)" % n_gpu_layers)
        if n_ctx < 0:
            raise MLError(6, "n_ctx %d must be >= 0 (0 = the model's)" % n_ctx)
        lib = N.load().lib
        self._lib = lib
        self.model_path = model_path
        self.verbose = verbose
        o = N.Options()
        lib.ml_options_init(byref(o))
        # llama-cpp-python's default: half the CPUs (hyper-threads share a core's arithmetic)
        o.n_threads = max((os.cpu_count() or 2) // 2, 1) if n_threads is None else int(n_threads)
        o.max_seq = int(n_ctx)
        o.batch = int(n_batch)
        o.map_weights = 1 if use_mmap else 0
        tok = _cstr(tokenizer_path, "tokenizer_path") if tokenizer_path else None
        N.check(lib, lib.ml_open(byref(self._ctx), _cstr(model_path, "model_path"), tok, byref(o)))
        self._info = N.ModelInfo()
        N.check(lib, lib.ml_get_info(self._ctx, byref(self._info)))
        self._tok = N.TokenizerInfo()
        N.check(lib, lib.ml_get_tokenizer_info(self._ctx, byref(self._tok)))
        self.n_threads = self._info.n_threads
        self._rng = random.Random(None if seed in (LLAMA_DEFAULT_SEED, -1) else seed)
        self.chat_format = self._chat_format(chat_format)
        so = N.SessionOptions()
        lib.ml_session_options_init(byref(so))
        N.check(lib, lib.ml_session_new(self._ctx, byref(so), byref(self._session)))
        if verbose:
            import sys
            print("legacy_ml: %s: %s, %d layers, context %d, %d threads, build %s" % (
                model_path, self._info.arch.decode(), self._info.n_layers, self._info.max_seq,
                self._info.n_threads, N.load().why), file=sys.stderr)

    # ---- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Frees the session, the context and its model now (also done when the object is collected)."""
        lib = self._lib
        if lib is None:
            return
        if self._session:
            lib.ml_session_free(self._session)
            self._session = c_void_p()
        if self._vocab:
            lib.ml_json_vocab_free(self._vocab)
            self._vocab = c_void_p()
        if self._ctx:
            lib.ml_close(self._ctx)
            self._ctx = c_void_p()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Llama":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _live(self) -> ctypes.CDLL:
        if not self._ctx:
            raise MLError(6, "this Llama is closed")
        return self._lib

    # ---- facts ----------------------------------------------------------------------------------
    def n_ctx(self) -> int:
        return self._info.max_seq

    def n_vocab(self) -> int:
        return self._info.vocab

    def token_bos(self) -> int:
        return self._tok.bos_id

    def token_eos(self) -> int:
        return self._tok.eos_id

    @property
    def metadata(self) -> Dict[str, str]:
        i = self._info
        return {"general.architecture": i.arch.decode(), "format": i.format.decode(), "isa": i.isa.decode(),
                "context_length": str(i.max_seq), "kv_type": str(i.kv_type)}

    # ---- tokens ---------------------------------------------------------------------------------
    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> List[int]:
        """Token ids of UTF-8 ``text`` (bytes, as llama-cpp-python); ``special`` splits special tokens
        (<|im_start|>, ...) out of the text: leave it off for untrusted text."""
        lib = self._live()
        if isinstance(text, str):
            text = text.encode("utf-8")
        if b"\0" in text:
            raise MLError(6, "text to tokenize holds a NUL byte")
        flags = (1 if add_bos else 0) | (2 if special else 0)
        cap = int(lib.ml_encode_bound(self._ctx, len(text)))
        buf = (c_int * max(cap, 1))()
        n = c_int()
        N.check(lib, lib.ml_encode_ex(self._ctx, text, flags, buf, cap, byref(n)))
        return list(buf[:n.value])

    def detokenize(self, tokens: Sequence[int], prev_tokens: Optional[Sequence[int]] = None,
                   special: bool = False) -> bytes:
        """The bytes of ``tokens`` (each piece as the tokenizer decodes it after the one before)."""
        lib = self._live()
        out = []
        prev = prev_tokens[-1] if prev_tokens else -1
        for t in tokens:
            p = lib.ml_decode(self._ctx, prev, int(t))
            if p is None:
                raise MLError(6, "token %d is outside the vocabulary [0, %d)" % (t, self._info.vocab))
            out.append(p)
            prev = int(t)
        return b"".join(out)

    # ---- chat -----------------------------------------------------------------------------------
    def _chat_format(self, name: Optional[str]) -> Optional[str]:
        lib = self._lib
        f = c_int()
        if name is None:
            if lib.ml_chat_detect(self._ctx, byref(f)) != 0:
                return None  # no template the runtime knows: create_chat_completion says so
            return lib.ml_chat_format_name(f.value).decode()
        ours = CHAT_FORMATS.get(name)
        if ours is None:
            raise MLError(6, "chat_format %r is not one the runtime renders (choose %s)" % (
                name, ", ".join(sorted(CHAT_FORMATS))))
        N.check(lib, lib.ml_chat_parse_name(ours.encode(), byref(f)))
        ids, n = POINTER(c_int)(), c_int()
        N.check(lib, lib.ml_chat_stop_ids(self._ctx, f.value, byref(ids), byref(n)))
        return ours

    def _render_chat(self, messages: Sequence[Dict[str, Any]]) -> tuple:
        lib = self._live()
        if self.chat_format is None:
            f = c_int()
            N.check(lib, lib.ml_chat_detect(self._ctx, byref(f)))  # raises with the runtime's line
        f = c_int()
        N.check(lib, lib.ml_chat_parse_name(self.chat_format.encode(), byref(f)))
        if not messages:
            raise MLError(6, "messages is empty")
        arr = (N.ChatMessage * len(messages))()
        keep = []
        for i, m in enumerate(messages):
            role, content = m.get("role"), m.get("content")
            if not isinstance(role, str) or not isinstance(content, str):
                raise MLError(6, "messages[%d] needs a string role and a string content" % i)
            r, c = _cstr(role, "messages[%d].role" % i), _cstr(content, "messages[%d].content" % i)
            keep += [r, c]
            arr[i].role, arr[i].content = r, c
        need = c_size_t()
        st = lib.ml_chat_render(self._ctx, f.value, arr, len(messages), 1, None, 0, byref(need))
        if st != 0 and need.value == 0:
            N.check(lib, st)
        buf = ctypes.create_string_buffer(need.value + 1)
        N.check(lib, lib.ml_chat_render(self._ctx, f.value, arr, len(messages), 1, buf, need.value + 1, byref(need)))
        text = buf.raw[:need.value]
        cap = int(lib.ml_encode_bound(self._ctx, len(text)))
        toks, n = (c_int * max(cap, 1))(), c_int()
        N.check(lib, lib.ml_chat_encode(self._ctx, text, toks, cap, byref(n)))
        ids, m = POINTER(c_int)(), c_int()
        N.check(lib, lib.ml_chat_stop_ids(self._ctx, f.value, byref(ids), byref(m)))
        return list(toks[:n.value]), [ids[i] for i in range(m.value)]

    # ---- generation -----------------------------------------------------------------------------
    def _generate(self, tokens: List[int], *, max_tokens: Optional[int], temperature: float, top_p: float,
                  top_k: int, min_p: float, repeat_penalty: float, presence_penalty: float,
                  frequency_penalty: float, stop: Union[None, str, List[str]], seed: Optional[int],
                  logprobs: Optional[int], logit_bias: Optional[Dict[int, float]], stop_ids: List[int],
                  schema: Optional[bytes], json_mode: bool, echo: bool = False) -> Iterator[tuple]:
        """Yields first (None, the prompt's echo or b"", None, None) once the prompt is set, then
        (token, text, logprob entry or None, finish name or None) per step."""
        lib = self._live()
        self._generation += 1
        mine = self._generation
        if not tokens:
            raise MLError(6, "the prompt has no tokens")
        if len(tokens) > self._info.max_seq:
            raise MLError(6, "the prompt has %d tokens but the context holds %d positions (n_ctx)" % (
                len(tokens), self._info.max_seq))
        if logprobs is not None and not 0 <= int(logprobs) <= 20:
            raise MLError(6, "logprobs %s is out of range [0, 20]" % logprobs)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        s = N.Sampling()
        lib.ml_sampling_default(byref(s))
        s.temperature, s.top_p, s.top_k, s.min_p = temperature, top_p, int(top_k), min_p
        s.repeat_penalty, s.presence_penalty, s.frequency_penalty = repeat_penalty, presence_penalty, frequency_penalty
        s.seed = (int(seed) if seed is not None and seed >= 0 else self._rng.getrandbits(63)) or 1
        bias_ids = (c_int * max(len(logit_bias or {}), 1))(*[int(k) for k in (logit_bias or {})])
        bias = (c_float * max(len(logit_bias or {}), 1))(*[float(v) for v in (logit_bias or {}).values()])
        s.n_logit_bias, s.logit_bias_ids, s.logit_bias = len(logit_bias or {}), bias_ids, bias
        o = N.SessionOptions()
        lib.ml_session_options_init(byref(o))
        o.temperature, o.top_p, o.seed = temperature, top_p, s.seed
        room = self._info.max_seq - len(tokens) + 1
        o.max_tokens = room if max_tokens is None or max_tokens <= 0 else min(int(max_tokens), room)
        ends = (c_int * max(len(stop_ids), 1))(*stop_ids)
        o.n_stop_ids, o.stop_ids = len(stop_ids), ends
        enc = [_cstr(x, "stop") for x in stops]
        strs = (c_char_p * max(len(enc), 1))(*enc)
        o.n_stop_strings, o.stop_strings = len(enc), strs
        o.sampling = ctypes.pointer(s)
        o.logprobs = 1 if logprobs is not None else 0
        o.top_logprobs = int(logprobs or 0)
        constraint = c_void_p()
        try:
            if schema is not None or json_mode:
                if not self._vocab:
                    N.check(lib, lib.ml_json_vocab_new(self._ctx, byref(self._vocab)))
                N.check(lib, lib.ml_json_constraint_new(self._vocab, schema, len(schema or b""), byref(constraint)))
                o.constraint = lib.ml_json_constraint_get(constraint)
            N.check(lib, lib.ml_session_set_options(self._session, byref(o)))
            arr = (c_int * len(tokens))(*tokens)
            N.check(lib, lib.ml_session_set_prompt(self._session, arr, len(tokens), None))
            yield None, self._echo(tokens) if echo else b"", None, None
            finish = c_int(N.FINISH_NONE)
            tok, text = c_int(), c_void_p()
            names = {N.FINISH_STOP_ID: "stop", N.FINISH_STOP_STRING: "stop", N.FINISH_COMPLETE: "stop",
                     N.FINISH_LENGTH: "length", N.FINISH_CONTEXT: "length"}
            while finish.value == N.FINISH_NONE:
                if self._generation != mine or not self._session:
                    raise MLError(6, "this stream's Llama has started another generation (or was closed) since")
                N.check(lib, lib.ml_session_next(self._session, byref(tok), byref(text), byref(finish)))
                piece = ctypes.string_at(text.value) if text.value else b""
                lp = None
                if logprobs is not None and finish.value != N.FINISH_STOP_ID:
                    chosen, top, n_top = c_float(), POINTER(N.Logprob)(), c_int()
                    N.check(lib, lib.ml_session_logprobs(self._session, byref(chosen), byref(top), byref(n_top)))
                    lp = (chosen.value, {self._piece(top[i].token): top[i].logprob for i in range(n_top.value)})
                yield tok.value, piece, lp, names.get(finish.value)
        finally:
            if constraint:  # every generation sets its own options first: none reaches this one again
                lib.ml_json_constraint_free(constraint)

    def _piece(self, token: int) -> str:
        p = self._lib.ml_decode(self._ctx, -1, token)
        return (p or b"").decode("utf-8", "replace")

    def _echo(self, tokens: List[int]) -> bytes:
        """The prompt as ml_run echoes it: each token's text after the one before (no BOS text)."""
        lib = self._live()
        out, text = [], c_void_p()
        start = 1 if tokens and tokens[0] == self._tok.bos_id else 0
        for i in range(start, len(tokens)):
            N.check(lib, lib.ml_session_echo(self._session, tokens[i - 1] if i else -1, tokens[i], byref(text)))
            out.append(ctypes.string_at(text.value) if text.value else b"")
        return b"".join(out)

    def create_completion(self, prompt: Union[str, List[int]], suffix: Optional[str] = None,
                          max_tokens: Optional[int] = 16, temperature: float = 0.8, top_p: float = 0.95,
                          min_p: float = 0.05, echo: bool = False, stop: Union[None, str, List[str]] = None,
                          logprobs: Optional[int] = None, repeat_penalty: float = 1.0, top_k: int = 40,
                          stream: bool = False, seed: Optional[int] = None, presence_penalty: float = 0.0,
                          frequency_penalty: float = 0.0, logit_bias: Optional[Dict[int, float]] = None,
                          model: Optional[str] = None) -> Union[Completion, Iterator[Completion]]:
        """A text completion as llama-cpp-python's (an OpenAI "text_completion" dict, or with
        ``stream=True`` an iterator of chunks). ``max_tokens`` None or <= 0: to the end of the
        context. Generation ends at the tokenizer's BOS (llama2.c's run.c), EOS, end of turn and stop
        ids, at a ``stop`` string (the text ends before it), or after ``max_tokens`` tokens."""
        if suffix:
            raise MLError(6, "suffix: fill-in-the-middle is not supported by this runtime")
        if isinstance(prompt, str):
            tokens = self.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        else:
            tokens = [int(t) for t in prompt]
        ends = [self._tok.bos_id] if self._tok.bos_id >= 0 else []
        ends += [self._tok.stop_ids[i] for i in range(self._tok.n_stop)]
        gen = self._generate(tokens, max_tokens=max_tokens, temperature=temperature, top_p=top_p, top_k=top_k,
                             min_p=min_p, repeat_penalty=repeat_penalty, presence_penalty=presence_penalty,
                             frequency_penalty=frequency_penalty, stop=stop, seed=seed, logprobs=logprobs,
                             logit_bias=logit_bias, stop_ids=ends, schema=None, json_mode=False, echo=echo)
        meta = {"id": "cmpl-" + str(uuid.uuid4()), "created": int(time.time()), "model": model or self.model_path}
        if stream:
            return self._stream_completion(gen, tokens, echo, logprobs, meta)
        return self._whole_completion(gen, tokens, echo, logprobs, meta)

    def _logprobs_dict(self, steps: List[tuple], offset: int) -> Dict[str, Any]:
        d: Dict[str, Any] = {"tokens": [], "text_offset": [], "token_logprobs": [], "top_logprobs": []}
        for tok, _, lp, _ in steps:
            d["tokens"].append(self._piece(tok))
            d["text_offset"].append(offset)
            offset += len(self._piece(tok))
            d["token_logprobs"].append(lp[0])
            d["top_logprobs"].append(lp[1])
        return d

    def _whole_completion(self, gen: Iterator[tuple], tokens: List[int], echo: bool, logprobs: Optional[int],
                          meta: Dict[str, Any]) -> Completion:
        head = next(gen)[1]
        steps = list(gen)
        text = head + b"".join(s[1] for s in steps)
        counted = [s for s in steps if s[2] is not None] if logprobs is not None else []
        n_gen = self._lib.ml_session_n_generated(self._session)
        return dict(meta, object="text_completion", choices=[{
            "text": text.decode("utf-8", "replace"), "index": 0,
            "logprobs": self._logprobs_dict(counted, len(head)) if logprobs is not None else None,
            "finish_reason": steps[-1][3]}],
            usage={"prompt_tokens": len(tokens), "completion_tokens": n_gen, "total_tokens": len(tokens) + n_gen})

    def _stream_completion(self, gen: Iterator[tuple], tokens: List[int], echo: bool, logprobs: Optional[int],
                           meta: Dict[str, Any]) -> Iterator[Completion]:
        head = next(gen)[1]  # the prompt is set (or its failure raised) at the call, not at the first chunk
        offset = 0

        def chunk(text: bytes, finish: Optional[str], lp: Any) -> Completion:
            return dict(meta, object="text_completion", choices=[{
                "text": text.decode("utf-8", "replace"), "index": 0, "logprobs": lp, "finish_reason": finish}])

        def run() -> Iterator[Completion]:
            nonlocal offset
            if echo:
                offset = len(head)
                yield chunk(head, None, None)
            step = next(gen)
            while True:
                tok, text, lp, finish = step
                lpd = self._logprobs_dict([step], offset) if logprobs is not None and lp is not None else None
                offset += len(text)
                if text or finish or lpd:
                    yield chunk(text, finish, lpd)
                if finish:
                    return
                step = next(gen)
        return run()

    def __call__(self, prompt: Union[str, List[int]], suffix: Optional[str] = None, max_tokens: Optional[int] = 16,
                 temperature: float = 0.8, top_p: float = 0.95, min_p: float = 0.05, echo: bool = False,
                 stop: Union[None, str, List[str]] = None, logprobs: Optional[int] = None,
                 repeat_penalty: float = 1.0, top_k: int = 40, stream: bool = False, seed: Optional[int] = None,
                 presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 logit_bias: Optional[Dict[int, float]] = None,
                 model: Optional[str] = None) -> Union[Completion, Iterator[Completion]]:
        """``create_completion``."""
        return self.create_completion(prompt, suffix=suffix, max_tokens=max_tokens, temperature=temperature,
                                      top_p=top_p, min_p=min_p, echo=echo, stop=stop, logprobs=logprobs,
                                      repeat_penalty=repeat_penalty, top_k=top_k, stream=stream, seed=seed,
                                      presence_penalty=presence_penalty, frequency_penalty=frequency_penalty,
                                      logit_bias=logit_bias, model=model)

    def create_chat_completion(self, messages: List[Dict[str, Any]], temperature: float = 0.2, top_p: float = 0.95,
                               top_k: int = 40, min_p: float = 0.05, stream: bool = False,
                               stop: Union[None, str, List[str]] = None, seed: Optional[int] = None,
                               response_format: Optional[Dict[str, Any]] = None, max_tokens: Optional[int] = None,
                               presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                               repeat_penalty: float = 1.0, logprobs: Optional[bool] = None,
                               top_logprobs: Optional[int] = None, logit_bias: Optional[Dict[int, float]] = None,
                               model: Optional[str] = None) -> Union[Completion, Iterator[Completion]]:
        """A chat completion as llama-cpp-python's ("chat.completion", or "chat.completion.chunk"s with
        ``stream=True``). The conversation is rendered by the model's chat template (or
        ``chat_format``); ``response_format`` {"type": "json_object"} constrains the reply to one JSON
        object, with "schema" to that JSON schema (docs/json-schema.md: the subset), as does
        {"type": "json_schema", "json_schema": {"schema": ...}} (OpenAI's form)."""
        tokens, ends = self._render_chat(messages)
        schema, json_mode = None, False
        if response_format is not None:
            kind = response_format.get("type")
            if kind == "json_object":
                json_mode = True
                if response_format.get("schema") is not None:
                    schema = json.dumps(response_format["schema"]).encode()
            elif kind == "json_schema":
                json_mode = True
                js = response_format.get("json_schema") or {}
                if js.get("schema") is not None:
                    schema = json.dumps(js["schema"]).encode()
            elif kind != "text":
                raise MLError(6, "response_format type %r: choose text, json_object or json_schema" % (kind,))
        n_top = None
        if logprobs:
            n_top = int(top_logprobs or 0)
        gen = self._generate(tokens, max_tokens=max_tokens, temperature=temperature, top_p=top_p, top_k=top_k,
                             min_p=min_p, repeat_penalty=repeat_penalty, presence_penalty=presence_penalty,
                             frequency_penalty=frequency_penalty, stop=stop, seed=seed, logprobs=n_top,
                             logit_bias=logit_bias, stop_ids=ends, schema=schema, json_mode=json_mode)
        meta = {"id": "chatcmpl-" + str(uuid.uuid4()), "created": int(time.time()), "model": model or self.model_path}
        next(gen)  # the prompt is set (or its failure raised) at the call
        if stream:
            def run() -> Iterator[Completion]:
                yield dict(meta, object="chat.completion.chunk", choices=[
                    {"index": 0, "delta": {"role": "assistant"}, "logprobs": None, "finish_reason": None}])
                step = next(gen)
                while True:
                    _, text, lp, finish = step
                    if text:
                        yield dict(meta, object="chat.completion.chunk", choices=[
                            {"index": 0, "delta": {"content": text.decode("utf-8", "replace")},
                             "logprobs": self._chat_logprobs([step]) if lp is not None else None,
                             "finish_reason": None}])
                    if finish:
                        yield dict(meta, object="chat.completion.chunk", choices=[
                            {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}])
                        return
                    step = next(gen)
            return run()
        steps = list(gen)
        text = b"".join(s[1] for s in steps).decode("utf-8", "replace")
        n_gen = self._lib.ml_session_n_generated(self._session)
        return dict(meta, object="chat.completion", choices=[{
            "index": 0, "message": {"role": "assistant", "content": text},
            "logprobs": self._chat_logprobs([s for s in steps if s[2] is not None]) if logprobs else None,
            "finish_reason": steps[-1][3]}],
            usage={"prompt_tokens": len(tokens), "completion_tokens": n_gen, "total_tokens": len(tokens) + n_gen})

    def _chat_logprobs(self, steps: List[tuple]) -> Dict[str, Any]:
        content = []
        for tok, _, lp, _ in steps:
            piece = self._piece(tok)
            content.append({"token": piece, "logprob": lp[0], "bytes": list(piece.encode("utf-8")),
                            "top_logprobs": [{"token": k, "logprob": v, "bytes": list(k.encode("utf-8"))}
                                             for k, v in lp[1].items()]})
        return {"content": content}
