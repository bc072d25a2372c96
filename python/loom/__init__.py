"""Loom from Python: a GGUF model, its tokenizer, a context's logits and generation.

    import loom
    model = loom.Model("model.gguf")
    print(model.generate("Once upon a time", max_tokens=32, temperature=0))

Over libloom.so's C ABI (include/loom/loom.h) with ctypes; the library is found at
$LOOM_LIBRARY, else where the system's loader finds libloom (after `make install`).
Every failure raises loom.LoomError with the library's message.
"""
from ._api import Context, LoomError, Model, Sampler

__all__ = ["Context", "LoomError", "Model", "Sampler"]
