"""A toy hosted engine, added the way a new provider is: this one module plus one table entry (`register()`).

`toy:MODEL` is the OpenAI-compatible client under its own prefix, with its own default key variable and its own
price list, pointed by `--base-url` at the loopback mock server (which answers MODEL = ar, diffusion or a timing
profile's name). Nothing else in the lab names it: the CLI, the run names and the prices ask the table.
"""

from __future__ import annotations

from engines import registry
from engines.hosted.openai_stream import OpenAIStreamEngine
from engines.registry import EngineKind, EngineOptions, EngineSpec, check_hosted, key_env, split_flag
from engines.simulated.profiles import Price

TOY_BASE_URL = "http://127.0.0.1:8808/v1"  # `voicelab mock-engine`'s default port
TOY_PRICE = Price(1.0, 2.0, "the toy's own price list (tests/engines/toy_engine_kind.py)", None)


class ToyEngine(OpenAIStreamEngine):
    """The OpenAI-compatible stream under the `toy` name (its `name` and messages say toy:MODEL)."""

    prefix = "toy"


def _open(spec: EngineSpec, opts: EngineOptions) -> ToyEngine:
    return ToyEngine(spec.name, opts.base_url or TOY_BASE_URL, key_env(spec.kind, opts.api_key_env))


TOY = EngineKind(
    "toy", (("toy:MODEL", "a toy provider: the OpenAI-compatible client under its own name"),), _open,
    prefix="toy", split=split_flag, check=check_hosted, options=frozenset({"base_url", "api_key_env"}),
    api_key_env="VOICELAB_TOY_KEY", price="model", prices={"ar": TOY_PRICE}, fixed_decoding=True)


def register() -> EngineKind:
    """Add `toy:` to the engine table."""
    return registry.register(TOY)
