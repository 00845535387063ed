"""legacy_ml: llama-cpp-python's ``Llama`` API over legacy-ml, a runtime for small Llama-style models
on legacy and modern CPUs. Pure Python over the C API (ctypes); the package carries one library per
ISA build of its architecture and loads the best one this CPU runs, as the ml_run launcher chooses
(``ML_ISA=<isa>`` forces one). ``info()`` says which and why.

    from legacy_ml import Llama
    llm = Llama(model_path="stories260K.gguf")
    print(llm("Once upon a time", max_tokens=32)["choices"][0]["text"])
"""
from ._native import MLError, info
from .llama import LLAMA_DEFAULT_SEED, Llama

__version__ = "0.1.0"
__all__ = ["Llama", "MLError", "info", "LLAMA_DEFAULT_SEED", "__version__"]
