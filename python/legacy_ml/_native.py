"""The C API (runtime/ml.h, structured/ml_structured.h) through ctypes, and the choice of the build.

The package carries one shared library per ISA build of its architecture (``lib/libml_<isa>.so``,
on Windows ``lib/ml_<isa>.dll``: cmake/Python.cmake) and the probe (``lib/libml_probe.so``,
``lib/ml_probe.dll``), compiled without ISA flags: the launcher's own choice (simd/cpu_select.h
``isa_choose``, launcher/ml_probe.cc) picks the best library this CPU runs, or the one ``ML_ISA``
names. Nothing is compiled at import.
"""

import ctypes
import os
import threading
from ctypes import (POINTER, Structure, c_char_p, c_float, c_int, c_size_t, c_uint64, c_void_p)
from typing import List, Optional

LIB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
# The libraries' file names per platform (os.name): (an ISA build's, with %s for the ISA; the probe's).
# python/setup.py packs by this table; verify/package_test.py checks the Windows wheel against it.
LIBRARY_NAMES = {"posix": ("libml_%s.so", "libml_probe.so"), "nt": ("ml_%s.dll", "ml_probe.dll")}
ISA_LIBRARY, PROBE_LIBRARY = LIBRARY_NAMES["nt" if os.name == "nt" else "posix"]

STATUS_NAMES = {0: "ML_OK", 1: "ML_E_IO", 2: "ML_E_FORMAT", 3: "ML_E_SHAPE", 4: "ML_E_NOMEM", 5: "ML_E_ISA",
                6: "ML_E_ARG"}


class MLError(RuntimeError):
    """A runtime failure: ``status`` (the ml_status number), ``status_name`` ("ML_E_FORMAT") and the
    runtime's one-line message (``message``, also ``str(e)``)."""

    def __init__(self, status: int, message: str):
        self.status = int(status)
        self.status_name = STATUS_NAMES.get(self.status, "ML_E_%d" % self.status)
        self.message = message
        super().__init__("%s (%s)" % (message, self.status_name))


# ---- structures of runtime/ml.h (field order and types as there) --------------------------------

class Options(Structure):
    _fields_ = [("n_threads", c_int), ("max_seq", c_int), ("reference", c_int), ("batch", c_int),
                ("kv_type", c_int), ("cache_dir", c_char_p), ("map_weights", c_int)]


class ModelInfo(Structure):
    _fields_ = [("dim", c_int), ("hidden_dim", c_int), ("n_layers", c_int), ("n_heads", c_int),
                ("n_kv_heads", c_int), ("vocab", c_int), ("max_seq", c_int), ("rope_theta", c_float),
                ("norm_eps", c_float), ("wtype", c_int), ("shared_classifier", c_int), ("n_threads", c_int),
                ("batch", c_int), ("layout", c_int), ("isa", c_char_p), ("kernels", c_char_p),
                ("file_bytes", c_uint64), ("weight_bytes", c_uint64), ("arena_bytes", c_uint64),
                ("arch", c_char_p), ("n_tokens", c_int), ("kv_type", c_int), ("format", c_char_p),
                ("load_note", c_char_p), ("head_dim", c_int)]


class TokenizerInfo(Structure):
    _fields_ = [("kind", c_int), ("n_tokens", c_int), ("bos_id", c_int), ("eos_id", c_int), ("eot_id", c_int),
                ("pad_id", c_int), ("add_bos", c_int), ("n_stop", c_int), ("stop_ids", POINTER(c_int)),
                ("pretokenizer", c_int), ("normalizer", c_int), ("chat_template", c_char_p),
                ("chat_template_bytes", c_size_t)]


class ChatMessage(Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p)]


class Sampling(Structure):
    _fields_ = [("temperature", c_float), ("top_p", c_float), ("seed", c_uint64), ("top_k", c_int),
                ("min_p", c_float), ("repeat_penalty", c_float), ("repeat_last_n", c_int),
                ("presence_penalty", c_float), ("frequency_penalty", c_float), ("n_logit_bias", c_int),
                ("logit_bias_ids", POINTER(c_int)), ("logit_bias", POINTER(c_float))]


class Logprob(Structure):
    _fields_ = [("token", c_int), ("logprob", c_float)]


class SessionOptions(Structure):
    _fields_ = [("size", c_size_t), ("temperature", c_float), ("top_p", c_float), ("seed", c_uint64),
                ("max_tokens", c_int), ("n_stop_ids", c_int), ("stop_ids", POINTER(c_int)),
                ("n_stop_strings", c_int), ("stop_strings", POINTER(c_char_p)), ("sampling", POINTER(Sampling)),
                ("logprobs", c_int), ("top_logprobs", c_int), ("constraint", c_void_p)]


FINISH_NONE, FINISH_STOP_ID, FINISH_STOP_STRING, FINISH_LENGTH, FINISH_CONTEXT, FINISH_COMPLETE = range(6)

_S = c_int  # ml_status
_P = c_void_p
_PROTOTYPES = {
    "ml_status_name": (c_char_p, [c_int]),
    "ml_last_error": (c_char_p, []),
    "ml_options_init": (None, [POINTER(Options)]),
    "ml_open": (_S, [POINTER(_P), c_char_p, c_char_p, POINTER(Options)]),
    "ml_close": (None, [_P]),
    "ml_get_info": (_S, [_P, POINTER(ModelInfo)]),
    "ml_encode_ex": (_S, [_P, c_char_p, c_int, POINTER(c_int), c_int, POINTER(c_int)]),
    "ml_encode_bound": (c_size_t, [_P, c_size_t]),
    "ml_decode": (c_char_p, [_P, c_int, c_int]),
    "ml_get_tokenizer_info": (_S, [_P, POINTER(TokenizerInfo)]),
    "ml_chat_detect": (_S, [_P, POINTER(c_int)]),
    "ml_chat_parse_name": (_S, [c_char_p, POINTER(c_int)]),
    "ml_chat_format_name": (c_char_p, [c_int]),
    "ml_chat_render": (_S, [_P, c_int, POINTER(ChatMessage), c_int, c_int, c_char_p, c_size_t, POINTER(c_size_t)]),
    "ml_chat_encode": (_S, [_P, c_char_p, POINTER(c_int), c_int, POINTER(c_int)]),
    "ml_chat_stop_ids": (_S, [_P, c_int, POINTER(POINTER(c_int)), POINTER(c_int)]),
    "ml_sampling_default": (None, [POINTER(Sampling)]),
    "ml_session_options_init": (None, [POINTER(SessionOptions)]),
    "ml_session_new": (_S, [_P, POINTER(SessionOptions), POINTER(_P)]),
    "ml_session_set_options": (_S, [_P, POINTER(SessionOptions)]),
    "ml_session_free": (None, [_P]),
    "ml_session_set_prompt": (_S, [_P, POINTER(c_int), c_int, POINTER(c_int)]),
    "ml_session_prefill": (_S, [_P, c_int, POINTER(c_int), POINTER(POINTER(c_float))]),
    "ml_session_next": (_S, [_P, POINTER(c_int), POINTER(ctypes.c_void_p), POINTER(c_int)]),
    "ml_session_echo": (_S, [_P, c_int, c_int, POINTER(ctypes.c_void_p)]),
    "ml_session_n_generated": (c_int, [_P]),
    "ml_session_logprobs": (_S, [_P, POINTER(c_float), POINTER(POINTER(Logprob)), POINTER(c_int)]),
    "ml_build_isa": (c_char_p, []),
    "ml_hwy_target": (c_char_p, []),
    "ml_json_vocab_new": (_S, [_P, POINTER(_P)]),
    "ml_json_vocab_free": (None, [_P]),
    "ml_json_constraint_new": (_S, [_P, c_char_p, c_size_t, POINTER(_P)]),
    "ml_json_constraint_get": (c_void_p, [_P]),
    "ml_json_constraint_free": (None, [_P]),
}


# The probe's functions (launcher/ml_probe.cc), bound as _PROTOTYPES are.
_PROBE_PROTOTYPES = {
    "ml_probe_choose": (c_int, [c_char_p, c_char_p, c_char_p, c_size_t, c_char_p, c_size_t]),
    "ml_probe_arch": (c_char_p, []),
}


def installed_isas(names: List[str], isa_library: str = ISA_LIBRARY, probe_library: str = PROBE_LIBRARY) -> List[str]:
    """The ISA builds among the file names (``libml_avx2.so`` -> ``avx2``), sorted; the probe left out."""
    head, tail = isa_library.split("%s")
    return sorted(n[len(head):-len(tail)] for n in names
                  if n.startswith(head) and n.endswith(tail) and len(n) > len(head) + len(tail) and n != probe_library)


def _installed() -> List[str]:
    """The ISA builds this package carries, from its lib/ folder."""
    return installed_isas(os.listdir(LIB_DIR)) if os.path.isdir(LIB_DIR) else []


def _bind(lib: ctypes.CDLL, prototypes: dict) -> ctypes.CDLL:
    for name, (res, args) in prototypes.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


_dll_dir = None  # Windows: os.add_dll_directory's handle, kept while the process runs


class _Loaded:
    def __init__(self, lib: ctypes.CDLL, isa: str, why: str, path: str):
        self.lib, self.isa, self.why, self.path = lib, isa, why, path


_lock = threading.Lock()
_loaded: Optional[_Loaded] = None


def load() -> _Loaded:
    """Loads (once per process) the library of the launcher's choice; MLError if none runs here."""
    global _loaded, _dll_dir
    with _lock:
        if _loaded is not None:
            return _loaded
        installed = _installed()
        probe_path = os.path.join(LIB_DIR, PROBE_LIBRARY)
        if not os.path.exists(probe_path):
            raise MLError(1, "legacy_ml: %s is missing: the package was built without its libraries "
                             "(python/README.md)" % probe_path)
        if os.name == "nt" and hasattr(os, "add_dll_directory") and _dll_dir is None:  # Python >= 3.8
            _dll_dir = os.add_dll_directory(LIB_DIR)  # (the DLLs import only Windows' own DLLs today)
        probe = _bind(ctypes.CDLL(probe_path), _PROBE_PROTOTYPES)
        isa = ctypes.create_string_buffer(64)
        why = ctypes.create_string_buffer(1024)
        forced = os.environ.get("ML_ISA") or None
        st = probe.ml_probe_choose(" ".join(installed).encode(), forced.encode() if forced else None,
                                   isa, 64, why, 1024)
        if st != 0:
            raise MLError(st, "legacy_ml: " + why.value.decode())
        path = os.path.join(LIB_DIR, ISA_LIBRARY % isa.value.decode())
        lib = _bind(ctypes.CDLL(path), _PROTOTYPES)
        _loaded = _Loaded(lib, isa.value.decode(), why.value.decode(), path)
        return _loaded


def check(lib: ctypes.CDLL, status: int) -> None:
    """Raises MLError with ml_last_error()'s line when status is not ML_OK."""
    if status != 0:
        raise MLError(status, (lib.ml_last_error() or b"").decode("utf-8", "replace"))


def info() -> dict:
    """Which build this process runs and why: {"isa", "why", "library", "installed", "arch",
    "hwy_target"}; "why" is the launcher's text (ML_LAUNCHER_CHOICE)."""
    ld = load()
    probe = _bind(ctypes.CDLL(os.path.join(LIB_DIR, PROBE_LIBRARY)), _PROBE_PROTOTYPES)
    return {"isa": ld.isa, "why": ld.why, "library": ld.path, "installed": _installed(),
            "arch": probe.ml_probe_arch().decode(), "hwy_target": (ld.lib.ml_hwy_target() or b"").decode()}
