"""storylm in Python: the tiny story language model's C library through ctypes,
with TransformerLens's habits (run_with_cache, run_with_hooks, hook names).

    import storylm
    m = storylm.load()                      # the shipped model
    logits, cache = m.run_with_cache("Lily found a red ball.")
    cache["blocks.0.attn.hook_pattern"]     # [H, T, T]

See docs/python.md for every call and the hook names."""

from ._lib import KeywordError, KeywordTypeError, StorylmError
from .cache import ActivationCache, act_name
from .views import AttentionView
from .model import Config, HookPoint, Model, Tokenizer, generate_defaults, generate_params, load, shipped_model
from .train import program, train, train_params
from .sae import SAE, SAEConfig, run_with_saes

Model.run_with_saes = run_with_saes  # m.run_with_saes(text, saes=[sae]), as SAELens's HookedSAETransformer

__all__ = ["ActivationCache", "act_name", "AttentionView", "Config", "HookPoint", "KeywordError", "KeywordTypeError", "Model", "SAE", "SAEConfig", "StorylmError", "Tokenizer", "generate_defaults",
           "generate_params", "load", "program", "run_with_saes", "shipped_model", "train", "train_params"]
__version__ = "0.1.0"
