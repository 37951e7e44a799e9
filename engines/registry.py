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

from pathlib import Path
from typing import Any

from engines.errors import EngineSpecError
from engines.profiles import PROFILES, get_profile
from engines.protocol import EngineLike

SPEC_FORMS = ("diffusion", "ar", "PATH", "replay:PATH", "openai:MODEL", "mercury:MODEL[+diffusing]",
              "profile:NAME", "profile:NAME@http")
SAMPLER_NAMES = ("threshold", "low_confidence", "revising", "autoregressive")  # engines.samplers.SAMPLERS
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
    import os

    name = DEFAULT_API_KEY_ENV[kind]
    return name if os.environ.get(name) else None


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
        import os

        if env is not None and not os.environ.get(env):
            raise EngineSpecError(f"engine '{spec}': environment variable {env} (the API key) is not set")
    elif sep and kind == "profile":
        _no_sampler(spec, sampler)
        name, at, where = rest.partition("@")
        get_profile(name)
        if at and not (where == "http" or (where.startswith("http:") and where[5:].isdigit())):
            raise EngineSpecError(f"engine '{spec}': expected profile:NAME@http or profile:NAME@http:PORT")
    elif Path(spec).is_dir() and (Path(spec) / "config.json").is_file():
        from engines.checkpoint import read_config

        _check_sampler(spec, read_config(Path(spec)).causal, sampler)
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
        from engines.engine import open_engine

        return open_engine(spec, sampler, device=device, **pace)
    if pace:
        _no_step_ms(spec)
    if sep and kind == "replay":
        _no_sampler(spec, sampler)
        from engines.trace import ReplayEngine

        return ReplayEngine(Path(rest))
    if sep and kind in ("openai", "mercury"):
        _no_sampler(spec, sampler)
        model, _, flag = rest.partition("+")
        env = _key_env(kind, base_url, api_key_env)
        if kind == "openai":
            if flag:
                raise EngineSpecError(f"engine '{spec}': unknown option '+{flag}' (openai takes none)")
            from engines.openai_stream import OPENAI_BASE_URL, OpenAIStreamEngine

            return OpenAIStreamEngine(model, base_url or OPENAI_BASE_URL, env)
        if flag not in ("", "diffusing"):
            raise EngineSpecError(f"engine '{spec}': unknown option '+{flag}' (mercury takes +diffusing)")
        from engines.mercury import MERCURY_BASE_URL, MercuryEngine

        return MercuryEngine(model, base_url or MERCURY_BASE_URL, env, diffusing=flag == "diffusing")
    if sep and kind == "profile":
        _no_sampler(spec, sampler)
        name, at, where = rest.partition("@")
        profile = get_profile(name)
        if not at:
            from engines.profile_engine import ProfileEngine

            return ProfileEngine(profile, seed=seed, device=device)
        return _profile_over_http(spec, profile.name, profile.kind, where, base_url)
    folder = Path(spec)
    if folder.is_dir() and (folder / "config.json").is_file():
        from engines.checkpoint import read_config

        _check_sampler(spec, read_config(folder).causal, sampler)
        from engines.engine import open_engine

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
    from engines.mercury import MercuryEngine
    from engines.openai_stream import OpenAIStreamEngine

    if where not in ("http",) and not where.startswith("http:"):
        raise EngineSpecError(f"engine '{spec}': expected profile:NAME@http or profile:NAME@http:PORT")
    mock = None
    if base_url is None and where.startswith("http:"):
        port = where.split(":", 1)[1]
        if not port.isdigit():
            raise EngineSpecError(f"engine '{spec}': port '{port}' is not a number")
        base_url = f"http://127.0.0.1:{port}/v1"
    if base_url is None:
        from engines.mock_server import start_mock

        mock = start_mock()
        base_url = mock.url
    if kind == "diffusion":
        client: EngineLike = MercuryEngine(name, base_url, None, diffusing=True, shape="replace")
    else:
        client = OpenAIStreamEngine(name, base_url, None)
    client.name = f"profile:{name}@http"
    return MockBackedEngine(client, mock)
