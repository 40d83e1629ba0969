"""storylm in Python: the tiny story language model's C library through ctypes,
with TransformerLens's habits (run_with_cache, run_with_hooks, hook names).

    import storylm
    m = storylm.load()                      # the shipped model
    logits, cache = m.run_with_cache("Lily found a red ball.")
    cache["blocks.0.attn.hook_pattern"]     # [H, T, T]

See docs/python.md for every call and the hook names."""

from ._lib import StorylmError
from .model import Config, HookPoint, Model, Tokenizer, generate_defaults, load, shipped_model
from .train import program, train

__all__ = ["Config", "HookPoint", "Model", "StorylmError", "Tokenizer", "generate_defaults", "load", "program", "shipped_model", "train"]
__version__ = "0.1.0"
