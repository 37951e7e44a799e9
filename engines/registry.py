"""Engine specs: one string names any engine the lab can run (`--engine SPEC`).

    diffusion | ar                  the shipped tiny engines (sampler: threshold / autoregressive by default)
    PATH                            a checkpoint folder (LLaDA or Dream layout)
    replay:PATH                     a recorded trace (engines/trace.py)
    openai:MODEL                    an OpenAI-compatible server (--base-url, key from --api-key-env)
    mercury:MODEL[+diffusing]       Inception's Mercury; `+diffusing` streams revising drafts
    profile:NAME                    the tiny engine at a timing profile's latency and speed, in-process
    profile:NAME@http[:PORT]        the same through the loopback mock server (started here unless
                                    --base-url points at a running `voicelab mock-engine`)

Unknown specs and sampler pairs that cannot work raise EngineSpecError with one line saying why.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engines.errors import CheckpointError, EngineSpecError
from engines.protocol import EngineLike
from engines.simulated.profiles import PROFILES, get_profile
from engines.trace import ReplayEngine, read_trace

SPEC_FORMS = ("diffusion", "ar", "PATH", "replay:PATH", "openai:MODEL", "mercury:MODEL[+diffusing]",
              "profile:NAME", "profile:NAME@http")
SAMPLER_NAMES = ("threshold", "low_confidence", "revising", "autoregressive")  # == engines.local.samplers.SAMPLERS (a test checks)
DEFAULT_API_KEY_ENV = {"openai": "OPENAI_API_KEY", "mercury": "INCEPTION_API_KEY"}


def _check_sampler(spec: str, causal: bool, sampler: str | None) -> None:
    if sampler is None:
        return
    if sampler not in SAMPLER_NAMES:
        raise EngineSpecError(f"engine '{spec}': unknown sampler '{sampler}' (one of {', '.join(SAMPLER_NAMES)})")
    if causal and sampler != "autoregressive":
        raise EngineSpecError(f"engine '{spec}': an autoregressive checkpoint cannot run the diffusion sampler "
                              f"'{sampler}' (use autoregressive)")
    if not causal and sampler == "autoregressive":
        raise EngineSpecError(f"engine '{spec}': a diffusion checkpoint cannot run the autoregressive sampler "
                              "(use threshold, low_confidence or revising)")


def _no_sampler(spec: str, sampler: str | None) -> None:
    if sampler is not None:
        raise EngineSpecError(f"engine '{spec}': takes no sampler (got '{sampler}'); its decoding is fixed")


def _key_env(kind: str, base_url: str | None, api_key_env: str | None) -> str | None:
    """The named variable; by default the provider's usual one, only if it is set (local servers need none)."""
    if api_key_env is not None:
        return api_key_env
    name = DEFAULT_API_KEY_ENV[kind]
    return name if os.environ.get(name) else None


def _causal_folder(folder: Path) -> bool:
    """Whether a checkpoint folder holds an autoregressive (causal) model, from its config.json alone."""
    from engines.local.checkpoint import read_config

    return read_config(folder).causal


def shipped_engines() -> list[str]:
    """The tiny engines whose weights are present in this install (`diffusion`, `ar`)."""
    from engines.local import TINY_MODELS

    return [name for name, folder in TINY_MODELS.items() if (folder / "config.json").is_file()]


def check_sampler(engine: str, sampler: str | None, causal: bool | None) -> None:
    """A known sampler that fits the engine (`causal` None: the engine's kind is not known here)."""
    if sampler is None:
        return
    if sampler not in SAMPLER_NAMES:
        raise EngineSpecError(f"--sampler '{sampler}': unknown (choose from {', '.join(SAMPLER_NAMES)})")
    if causal is True and sampler != "autoregressive":
        raise EngineSpecError(f"--engine {engine} --sampler {sampler}: an autoregressive model decodes only with "
                              "'autoregressive' (or leave --sampler out)")
    if causal is False and sampler == "autoregressive":
        raise EngineSpecError(f"--engine {engine} --sampler {sampler}: a diffusion model needs a diffusion sampler "
                              f"({', '.join(s for s in SAMPLER_NAMES if s != 'autoregressive')})")


def check_engine_options(engine: str, *, sampler: str | None = None, step_ms: float | None = None,
                         base_url: str | None = None, api_key_env: str | None = None) -> None:
    """The engine options of a run, checked before anything loads; each refusal one line naming the option:

    - the sampler is a known one and fits the engine: an autoregressive (causal) checkpoint decodes only with
      `autoregressive`, a diffusion one never does (the tiny `ar` with `threshold` babbles "ononon...");
    - a replay trace is readable UTF-8, every snapshot line well formed, and it holds at least one generation
      (else every turn would error); `--sampler` and `--step-ms` do not apply to it;
    - a checkpoint folder's config.json is UTF-8 JSON with fields of the right types;
    - other specs (HTTP engines, profiles) pass `check_spec` (form, profile name, `+flags`, the key's variable,
      where --base-url applies), which opens nothing.
    Raises EngineSpecError (option conflicts) or CheckpointError (files).
    """
    from engines.local import TINY_MODELS
    if base_url is not None or api_key_env is not None:  # only where they apply
        check_spec(engine, base_url=base_url, api_key_env=api_key_env)
    if engine.startswith("replay:"):
        path = Path(engine.split(":", 1)[1])
        if sampler is not None:
            raise EngineSpecError(f"--sampler '{sampler}': a replay trace plays back its own recorded sampler")
        _, gens = read_trace(path)  # TraceError (a CheckpointError) names the file and line
        if not gens:
            raise CheckpointError(f"{path}: trace holds no generation (a header alone answers nothing)")
        if not any(g.snapshots for g in gens):
            raise CheckpointError(f"{path}: no generation in the trace has a snapshot")
        if step_ms is not None:
            raise EngineSpecError("--step-ms: a replay trace plays back its own recorded timing")
        return
    folder = TINY_MODELS.get(engine, Path(engine))
    if step_ms is not None and not folder.is_dir():
        raise EngineSpecError(f"--step-ms: engine '{engine}' has its own timing (step pacing is for the tiny "
                              "models and checkpoint folders)")
    if folder.is_dir():
        check_sampler(engine, sampler, _causal_folder(folder))
    elif ":" in engine:
        check_sampler(engine, sampler, None)
        check_spec(engine, sampler=sampler, base_url=base_url, api_key_env=api_key_env)
    else:
        raise CheckpointError(f"{folder}: checkpoint folder not found (--engine takes diffusion, ar, a folder, "
                              "replay:TRACE.jsonl, openai:MODEL, mercury:MODEL[+diffusing] or profile:NAME[@http])")


def check_spec(spec: str, *, sampler: str | None = None, base_url: str | None = None,
               api_key_env: str | None = None) -> None:
    """Everything about a spec that can be checked without opening it (no model loads, no connection):
    its form, the sampler pairing, the profile name, `+flags`, the key variable, where --base-url applies."""
    spec = spec.strip()
    kind, sep, rest = spec.partition(":")
    http = sep and (kind in ("openai", "mercury") or (kind == "profile" and "@" in rest))
    if base_url is not None and not http:
        raise EngineSpecError(f"engine '{spec}': --base-url applies only to openai:, mercury: and "
                              "profile:NAME@http engines")
    if api_key_env is not None and not (sep and kind in ("openai", "mercury")):
        raise EngineSpecError(f"engine '{spec}': --api-key-env applies only to openai: and mercury: engines")
    if spec in ("diffusion", "ar"):
        _check_sampler(spec, spec == "ar", sampler)
    elif sep and kind == "replay":
        _no_sampler(spec, sampler)
    elif sep and kind in ("openai", "mercury"):
        _no_sampler(spec, sampler)
        model, _, flag = rest.partition("+")
        if not model:
            raise EngineSpecError(f"engine '{spec}': a model name is needed, e.g. '{kind}:MODEL'")
        if flag not in (("",) if kind == "openai" else ("", "diffusing")):
            raise EngineSpecError(f"engine '{spec}': unknown option '+{flag}' "
                                  f"({'openai takes none' if kind == 'openai' else 'mercury takes +diffusing'})")
        env = _key_env(kind, base_url, api_key_env)
        if env is not None and not os.environ.get(env):
            raise EngineSpecError(f"engine '{spec}': environment variable {env} (the API key) is not set")
    elif sep and kind == "profile":
        _no_sampler(spec, sampler)
        name, at, where = rest.partition("@")
        get_profile(name)
        if at and not (where == "http" or (where.startswith("http:") and where[5:].isdigit())):
            raise EngineSpecError(f"engine '{spec}': expected profile:NAME@http or profile:NAME@http:PORT")
    elif Path(spec).is_dir() and (Path(spec) / "config.json").is_file():
        _check_sampler(spec, _causal_folder(Path(spec)), sampler)
    else:
        raise EngineSpecError(f"unknown engine '{spec}' (expected one of {', '.join(SPEC_FORMS)}; "
                              f"profiles: {', '.join(PROFILES)})")


def open_engine_spec(spec: str, *, sampler: str | None = None, base_url: str | None = None,
                     api_key_env: str | None = None, device: str | None = None, seed: int = 0,
                     step_ms: float | None = None) -> EngineLike:
    """The engine a spec names (see the module docstring). `step_ms`: checkpoint engines only (the tiny models
    and folders), the least wall time per sampler step (SamplerConfig.step_ms)."""
    check_spec(spec, sampler=sampler, base_url=base_url, api_key_env=api_key_env)
    pace = {"step_ms": float(step_ms)} if step_ms else {}
    spec = spec.strip()
    kind, sep, rest = spec.partition(":")
    if spec in ("diffusion", "ar"):
        _check_sampler(spec, spec == "ar", sampler)
        from engines.local.engine import open_engine

        return open_engine(spec, sampler, device=device, **pace)
    if pace:
        _no_step_ms(spec)
    if sep and kind == "replay":
        _no_sampler(spec, sampler)
        return ReplayEngine(Path(rest))
    if sep and kind in ("openai", "mercury"):
        _no_sampler(spec, sampler)
        model, _, flag = rest.partition("+")
        env = _key_env(kind, base_url, api_key_env)
        if kind == "openai":
            if flag:
                raise EngineSpecError(f"engine '{spec}': unknown option '+{flag}' (openai takes none)")
            from engines.hosted.openai_stream import OPENAI_BASE_URL, OpenAIStreamEngine

            return OpenAIStreamEngine(model, base_url or OPENAI_BASE_URL, env)
        if flag not in ("", "diffusing"):
            raise EngineSpecError(f"engine '{spec}': unknown option '+{flag}' (mercury takes +diffusing)")
        from engines.hosted.mercury import MERCURY_BASE_URL, MercuryEngine

        return MercuryEngine(model, base_url or MERCURY_BASE_URL, env, diffusing=flag == "diffusing")
    if sep and kind == "profile":
        _no_sampler(spec, sampler)
        name, at, where = rest.partition("@")
        profile = get_profile(name)
        if not at:
            from engines.simulated.profile_engine import ProfileEngine

            return ProfileEngine(profile, seed=seed, device=device)
        return _profile_over_http(spec, profile.name, profile.kind, where, base_url)
    folder = Path(spec)
    if folder.is_dir() and (folder / "config.json").is_file():
        _check_sampler(spec, _causal_folder(folder), sampler)
        from engines.local.engine import open_engine

        return open_engine(str(folder), sampler, device=device, **pace)
    raise EngineSpecError(f"unknown engine '{spec}' (expected one of {', '.join(SPEC_FORMS)}; "
                          f"profiles: {', '.join(PROFILES)})")


def _no_step_ms(spec: str) -> None:
    folder = Path(spec)
    if not (folder.is_dir() and (folder / "config.json").is_file()):
        raise EngineSpecError(f"--step-ms: engine '{spec}' has its own timing (step pacing is for the tiny models "
                              "and checkpoint folders)")


class MockBackedEngine:
    """A profile through the loopback mock: the HTTP client engine plus the mock it started (closed together)."""

    def __init__(self, client: EngineLike, mock: Any) -> None:
        self.client = client
        self.mock = mock
        self.name = client.name
        self.sampler = client.sampler

    @property
    def kind(self) -> str:
        return self.client.kind

    def describe(self) -> dict[str, Any]:
        return self.client.describe() | {"mock": "started in-process on loopback"}

    def generate(self, messages: Any, **overrides: object) -> Any:
        return self.client.generate(messages, **overrides)

    def warm_up(self) -> None:
        self.client.warm_up()

    def close(self) -> None:
        self.client.close()
        if self.mock is not None:
            self.mock.stop()


def _profile_over_http(spec: str, name: str, kind: str, where: str, base_url: str | None) -> EngineLike:
    """`profile:NAME@http`: Mercury-style client (diffusing drafts for diffusion profiles) against the mock."""
    from engines.hosted.mercury import MercuryEngine
    from engines.hosted.openai_stream import OpenAIStreamEngine

    if where not in ("http",) and not where.startswith("http:"):
        raise EngineSpecError(f"engine '{spec}': expected profile:NAME@http or profile:NAME@http:PORT")
    mock = None
    if base_url is None and where.startswith("http:"):
        port = where.split(":", 1)[1]
        if not port.isdigit():
            raise EngineSpecError(f"engine '{spec}': port '{port}' is not a number")
        base_url = f"http://127.0.0.1:{port}/v1"
    if base_url is None:
        from engines.simulated.mock_server import start_mock

        mock = start_mock()
        base_url = mock.url
    if kind == "diffusion":
        client: EngineLike = MercuryEngine(name, base_url, None, diffusing=True, shape="replace")
    else:
        client = OpenAIStreamEngine(name, base_url, None)
    client.name = f"profile:{name}@http"
    return MockBackedEngine(client, mock)
