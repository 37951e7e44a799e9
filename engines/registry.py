"""Engine specs: one string names any engine the lab can run (`--engine SPEC`), and one table, `KINDS`, says what
each kind of spec is.

An `EngineKind` holds everything the lab knows about one kind: the forms it is written in (and what each names),
how a spec of it is recognised and split, which options it takes, how it is opened, where its price comes from,
whether `voicelab probe` takes it, its API key's default variable and its label in run names. The grammar
(`SPEC_GRAMMAR`), the CLI's help, option validation, run names and price lookups all read the table, so adding an
engine is one module plus one `register(EngineKind(...))`. The built-in kinds, in the grammar's order: the shipped
tiny engines, a checkpoint folder, a recorded trace, an OpenAI-compatible server, Inception's Mercury and the
timing profiles (in-process, or through the loopback mock server); `spec_table()` lists their forms for the docs.

Unknown specs and sampler pairs that cannot work raise EngineSpecError with one line saying why.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines.errors import CheckpointError, EngineSpecError
from engines.protocol import EngineLike
from engines.simulated.profiles import PROFILES, Price, get_profile
from engines.trace import ReplayEngine, read_trace

SAMPLER_NAMES = ("threshold", "low_confidence", "revising", "autoregressive")  # == engines.local.samplers.SAMPLERS (a test checks)
OPTIONS = ("sampler", "step_ms", "base_url", "api_key_env")  # the engine options a run may give, by field name
PRICE_SOURCES = ("local", "model", "unpublished")  # runs here for free / the named model's price / nobody's


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """What a run passes along with a spec (PipelineConfig's engine fields, plus where and how to open it)."""

    sampler: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    device: str | None = None
    seed: int = 0
    step_ms: float | None = None


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """A spec split by its kind (`parse_spec`): its shape only, nothing checked or opened."""

    kind: EngineKind
    text: str  # the whole spec, stripped
    rest: str  # after `PREFIX:` (the whole spec for kinds without a prefix)
    name: str  # the tiny engine, folder, trace, model or profile
    flag: str = ""  # after `+` (mercury's `diffusing`)
    where: str | None = None  # after `@` (a profile's `http` or `http:PORT`); None: no `@`

    @property
    def options(self) -> frozenset[str]:
        """The options (of OPTIONS) this spec takes."""
        return self.kind.options_of(self) if self.kind.options_of else self.kind.options

    def takes(self, option: str) -> bool:
        return option in self.options

    @property
    def label(self) -> str:
        """Its name in run folders and tables (folder-safe)."""
        return self.kind.label(self)


def _whole(rest: str) -> tuple[str, str, str | None]:
    return rest, "", None


def split_flag(rest: str) -> tuple[str, str, str | None]:
    """`MODEL[+FLAG]`."""
    name, _, flag = rest.partition("+")
    return name, flag, None


def _split_at(rest: str) -> tuple[str, str, str | None]:
    name, at, where = rest.partition("@")
    return name, "", where if at else None


def prefixed_label(spec: EngineSpec) -> str:
    """KIND-NAME, every run of characters a folder name should not hold made one hyphen."""
    return f"{spec.kind.prefix}-{re.sub(r'[^A-Za-z0-9._]+', '-', spec.rest).strip('-')}"


def _no_check(spec: EngineSpec, opts: EngineOptions) -> None:
    """Nothing to check beyond the options the kind takes."""


@dataclass(frozen=True, slots=True)
class EngineKind:
    """One kind of engine spec: how it is written, checked, opened, priced and named (see the module doc)."""

    name: str  # in messages and docs: "openai"
    forms: tuple[tuple[str, str], ...]  # (form, what it names), in the grammar and the docs' table
    open: Callable[[EngineSpec, EngineOptions], EngineLike]  # called after `check` passed
    prefix: str | None = None  # "openai" for `openai:...`; None: matched by `names` (or the folder fallback)
    names: tuple[str, ...] = ()  # whole specs of this kind (the tiny engines)
    split: Callable[[str], tuple[str, str, str | None]] = _whole  # rest -> (name, flag, where)
    flags: tuple[str, ...] = ()  # the `+FLAG`s it takes
    check: Callable[[EngineSpec, EngineOptions], None] = _no_check  # what can be checked opening nothing
    # run checks before anything loads (`check_engine_options`; the str is the spec as given): files it reads
    preflight: Callable[[EngineSpec, str, EngineOptions], None] | None = None
    options: frozenset[str] = frozenset()  # of OPTIONS
    options_of: Callable[[EngineSpec], frozenset[str]] | None = None  # where a spec's form narrows them
    option_forms: Mapping[str, str] = field(default_factory=dict)  # option -> the form it applies to, in messages
    api_key_env: str | None = None  # the key's variable when --api-key-env is not given (used only if set)
    price: str = "unpublished"  # one of PRICE_SOURCES
    prices: Mapping[str, Price] = field(default_factory=dict)  # model -> its price, ahead of the shared PRICES
    probe: bool = True  # `voicelab probe` takes it
    label: Callable[[EngineSpec], str] = prefixed_label
    fixed_decoding: bool = False  # the provider decodes: run names carry no sampler
    default_samplers: Mapping[str, str] = field(default_factory=dict)  # name -> its sampler, for run names

    @property
    def hosted(self) -> bool:
        """Reached over HTTP in some form (takes --base-url there)."""
        return "base_url" in self.options


# ---- checks shared by the kinds


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


def key_env(kind: EngineKind, api_key_env: str | None) -> str | None:
    """The named variable; by default the kind's usual one, only if it is set (local servers need none)."""
    if api_key_env is not None or kind.api_key_env is None:
        return api_key_env
    return kind.api_key_env if os.environ.get(kind.api_key_env) else None


def check_hosted(spec: EngineSpec, opts: EngineOptions) -> None:
    """A model name, only the `+flags` the kind takes, and the key's variable set."""
    kind = spec.kind
    if not spec.name:
        raise EngineSpecError(f"engine '{spec.text}': a model name is needed, e.g. '{kind.prefix}:MODEL'")
    if spec.flag and spec.flag not in kind.flags:
        takes = " or ".join(f"+{f}" for f in kind.flags) or "none"
        raise EngineSpecError(f"engine '{spec.text}': unknown option '+{spec.flag}' ({kind.prefix} takes {takes})")
    env = key_env(kind, opts.api_key_env)
    if env is not None and not os.environ.get(env):
        raise EngineSpecError(f"engine '{spec.text}': environment variable {env} (the API key) is not set")


def _check_tiny(spec: EngineSpec, opts: EngineOptions) -> None:
    _check_sampler(spec.text, spec.kind.default_samplers[spec.name] == "autoregressive", opts.sampler)


def _check_folder(spec: EngineSpec, opts: EngineOptions) -> None:
    folder = Path(spec.text)
    if not (folder.is_dir() and (folder / "config.json").is_file()):
        raise _unknown(spec.text)
    _check_sampler(spec.text, _causal_folder(folder), opts.sampler)


def _check_profile(spec: EngineSpec, opts: EngineOptions) -> None:
    get_profile(spec.name)
    where = spec.where
    if where is not None and not (where == "http" or (where.startswith("http:") and where[5:].isdigit())):
        raise EngineSpecError(f"engine '{spec.text}': expected profile:NAME@http or profile:NAME@http:PORT")


def _unknown(spec: str) -> EngineSpecError:
    return EngineSpecError(f"unknown engine '{spec}' (expected one of {', '.join(spec_forms())}; "
                           f"profiles: {', '.join(PROFILES)})")


def _step_error(spec: str) -> EngineSpecError:
    return EngineSpecError(f"--step-ms: engine '{spec}' has its own timing (step pacing is for the tiny models "
                           "and checkpoint folders)")


# ---- run checks that read files (check_engine_options)


def _preflight_spec(spec: EngineSpec, engine: str, opts: EngineOptions) -> None:
    """Nothing on disk: step pacing only where taken, a known sampler, then everything `check_spec` checks."""
    if opts.step_ms is not None and not spec.takes("step_ms"):
        raise _step_error(engine)
    check_sampler(engine, opts.sampler, None)
    check_spec(engine, sampler=opts.sampler, base_url=opts.base_url, api_key_env=opts.api_key_env)


def _preflight_checkpoint(spec: EngineSpec, engine: str, opts: EngineOptions) -> None:
    """A checkpoint folder's config.json is UTF-8 JSON with fields of the right types and fits the sampler."""
    folder = _tiny_models().get(engine, Path(engine))
    if opts.step_ms is not None and not folder.is_dir():
        raise _step_error(engine)
    if folder.is_dir():
        check_sampler(engine, opts.sampler, _causal_folder(folder))
    elif ":" in engine:  # not a folder, nor any kind's prefix: check_spec says so
        check_sampler(engine, opts.sampler, None)
        check_spec(engine, sampler=opts.sampler, base_url=opts.base_url, api_key_env=opts.api_key_env)
    else:
        raise CheckpointError(f"{folder}: checkpoint folder not found (--engine takes {spec_grammar()})")


def _preflight_replay(spec: EngineSpec, engine: str, opts: EngineOptions) -> None:
    """The trace is readable UTF-8, every snapshot line well formed, with at least one generation (else every
    turn would error); it plays back its own sampler and timing."""
    path = Path(spec.name)
    if opts.sampler is not None:
        raise EngineSpecError(f"--sampler '{opts.sampler}': a replay trace plays back its own recorded sampler")
    _, gens = read_trace(path)  # TraceError (a CheckpointError) names the file and line
    if not gens:
        raise CheckpointError(f"{path}: trace holds no generation (a header alone answers nothing)")
    if not any(g.snapshots for g in gens):
        raise CheckpointError(f"{path}: no generation in the trace has a snapshot")
    if opts.step_ms is not None:
        raise EngineSpecError("--step-ms: a replay trace plays back its own recorded timing")


# ---- factories (each imports its subpackage when called, so reading a spec loads no torch)


def _tiny_models() -> dict[str, Path]:
    from engines.local import TINY_MODELS

    return TINY_MODELS


def _causal_folder(folder: Path) -> bool:
    """Whether a checkpoint folder holds an autoregressive (causal) model, from its config.json alone."""
    from engines.local.checkpoint import read_config

    return read_config(folder).causal


def _open_checkpoint(spec: EngineSpec, opts: EngineOptions) -> EngineLike:
    from engines.local.engine import open_engine

    pace = {"step_ms": float(opts.step_ms)} if opts.step_ms else {}
    where = spec.name if spec.kind.names else str(Path(spec.text))
    return open_engine(where, opts.sampler, device=opts.device, **pace)


def _open_replay(spec: EngineSpec, opts: EngineOptions) -> EngineLike:
    return ReplayEngine(Path(spec.name))


def _open_openai(spec: EngineSpec, opts: EngineOptions) -> EngineLike:
    from engines.hosted.openai_stream import OPENAI_BASE_URL, OpenAIStreamEngine

    return OpenAIStreamEngine(spec.name, opts.base_url or OPENAI_BASE_URL, key_env(spec.kind, opts.api_key_env))


def _open_mercury(spec: EngineSpec, opts: EngineOptions) -> EngineLike:
    from engines.hosted.mercury import MERCURY_BASE_URL, MercuryEngine

    return MercuryEngine(spec.name, opts.base_url or MERCURY_BASE_URL, key_env(spec.kind, opts.api_key_env),
                         diffusing=spec.flag == "diffusing")


def _open_profile(spec: EngineSpec, opts: EngineOptions) -> EngineLike:
    profile = get_profile(spec.name)
    if spec.where is None:
        from engines.simulated.profile_engine import ProfileEngine

        return ProfileEngine(profile, seed=opts.seed, device=opts.device)
    return _profile_over_http(spec, profile.name, profile.kind, opts.base_url)


# ---- the table


TINY = EngineKind(
    "tiny", (("diffusion", "the shipped tiny engines (default samplers: threshold, autoregressive)"),
             ("ar", "the shipped tiny engines (default samplers: threshold, autoregressive)")),
    _open_checkpoint, names=("diffusion", "ar"), check=_check_tiny, preflight=_preflight_checkpoint,
    options=frozenset({"sampler", "step_ms"}), price="local", label=lambda s: s.name,
    default_samplers={"diffusion": "threshold", "ar": "autoregressive"})
FOLDER = EngineKind(  # the fallback: any spec no other kind claims
    "folder", (("PATH", "a checkpoint folder, LLaDA or Dream layout"),), _open_checkpoint, check=_check_folder,
    preflight=_preflight_checkpoint, options=frozenset({"sampler", "step_ms"}), price="local",
    label=lambda s: Path(s.text).name)
REPLAY = EngineKind(
    "replay", (("replay:PATH", "a recorded snapshot trace, played back with its original timing"),), _open_replay,
    prefix="replay", preflight=_preflight_replay, label=lambda s: "replay")
OPENAI = EngineKind(
    "openai", (("openai:MODEL", "an OpenAI-compatible chat-completions server"),), _open_openai, prefix="openai",
    split=split_flag, check=check_hosted, options=frozenset({"base_url", "api_key_env"}),
    api_key_env="OPENAI_API_KEY", price="model", fixed_decoding=True)
MERCURY = EngineKind(
    "mercury", (("mercury:MODEL[+diffusing]", "Inception's Mercury; `+diffusing` streams revising drafts"),),
    _open_mercury, prefix="mercury", split=split_flag, flags=("diffusing",), check=check_hosted,
    options=frozenset({"base_url", "api_key_env"}), api_key_env="INCEPTION_API_KEY", price="model",
    fixed_decoding=True)
PROFILE = EngineKind(
    "profile", (("profile:NAME", "the tiny engine's answers at a named timing profile's latency and speed"),
                ("profile:NAME@http[:PORT]", "the same, through the loopback mock server")),
    _open_profile, prefix="profile", split=_split_at, check=_check_profile, options=frozenset({"base_url"}),
    options_of=lambda s: s.kind.options if s.where is not None else frozenset(),
    option_forms={"base_url": "profile:NAME@http"}, price="model", fixed_decoding=True)

KINDS: list[EngineKind] = [TINY, FOLDER, REPLAY, OPENAI, MERCURY, PROFILE]  # in the grammar's order


def register(kind: EngineKind) -> EngineKind:
    """Add a kind to the table (a new provider: its module plus this one call); its prefix must be new."""
    if kind.prefix is None or not re.fullmatch(r"[a-z][a-z0-9_-]*", kind.prefix):
        raise EngineSpecError(f"engine kind '{kind.name}': needs a prefix of lower-case letters, digits, - or _")
    if kind.price not in PRICE_SOURCES or not set(kind.options) <= set(OPTIONS):
        raise EngineSpecError(f"engine kind '{kind.name}': price one of {', '.join(PRICE_SOURCES)}, options of "
                              f"{', '.join(OPTIONS)}")
    taken = [k.name for k in KINDS if k.prefix == kind.prefix or kind.prefix in k.names]
    if taken:
        raise EngineSpecError(f"engine kind '{kind.name}': prefix '{kind.prefix}:' is taken by '{taken[0]}'")
    KINDS.append(kind)
    return kind


def find_kind(spec: str) -> EngineKind | None:
    """The kind whose name or `PREFIX:` the spec carries; None for anything else (a folder, or no spec)."""
    text = spec.strip()
    head, sep, _ = text.partition(":")
    return next((k for k in KINDS if text in k.names or (sep and k.prefix == head)), None)


def kind_of(spec: str) -> EngineKind:
    """The kind of a spec: one with its name or prefix, else a checkpoint folder."""
    return find_kind(spec) or FOLDER


def parse_spec(spec: str) -> EngineSpec:
    """The spec split by its kind; raises nothing (`check_spec` judges it)."""
    text = spec.strip()
    kind = kind_of(text)
    rest = text.partition(":")[2] if kind.prefix else text
    name, flag, where = kind.split(rest)
    return EngineSpec(kind, text, rest, name, flag, where)


def spec_forms() -> list[str]:
    """Every form of every kind, in the table's order."""
    return [form for k in KINDS for form, _ in k.forms]


def spec_grammar() -> str:
    return " | ".join(spec_forms())


SPEC_GRAMMAR = spec_grammar()  # the built-in kinds' (what the CLI's help quotes)


def _option_flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def _forms_taking(option: str) -> str:
    forms = [k.option_forms.get(option, f"{k.prefix}:") for k in KINDS if option in k.options]
    return " and ".join(filter(None, [", ".join(forms[:-1]), forms[-1]])) if forms else "no"


def spec_table() -> str:
    """The docs' table of forms (docs/engines.md holds it; a test compares): form, engine, options, price."""
    price = {"local": "none: runs here", "model": "the model's published price", "unpublished": "not published"}
    rows = ["| spec | engine | options | price per token |", "|---|---|---|---|"]
    cells: list[list[str]] = []
    for kind in KINDS:
        for form, about in kind.forms:
            taken = sorted(parse_spec(form).options, key=OPTIONS.index)
            opts = ", ".join(f"`{_option_flag(o)}`" for o in taken) or "none"
            if kind.api_key_env:
                opts += f" (key: `{kind.api_key_env}` if set)"
            if cells and cells[-1][1:] == [about, opts, price[kind.price]]:
                cells[-1][0] += f", `{form}`"  # forms alike in all but their spelling share a row
            else:
                cells.append([f"`{form}`", about, opts, price[kind.price]])
    return "\n".join(rows + [f"| {' | '.join(c)} |" for c in cells])


# ---- the API


def shipped_engines() -> list[str]:
    """The tiny engines whose weights are present in this install (`diffusion`, `ar`)."""
    return [name for name, folder in _tiny_models().items() if (folder / "config.json").is_file()]


def check_spec(spec: str, *, sampler: str | None = None, base_url: str | None = None,
               api_key_env: str | None = None) -> EngineSpec:
    """Everything about a spec that can be checked without opening it (no model loads, no connection):
    where --base-url and --api-key-env apply, the sampler pairing, then the kind's own checks (its form, the
    profile name, `+flags`, the key variable). Returns the parsed spec."""
    parsed = parse_spec(spec)
    for option, value in (("base_url", base_url), ("api_key_env", api_key_env)):
        if value is not None and not parsed.takes(option):
            raise EngineSpecError(f"engine '{parsed.text}': {_option_flag(option)} applies only to "
                                  f"{_forms_taking(option)} engines")
    if sampler is not None and not parsed.takes("sampler"):
        raise EngineSpecError(f"engine '{parsed.text}': takes no sampler (got '{sampler}'); its decoding is fixed")
    parsed.kind.check(parsed, EngineOptions(sampler=sampler, base_url=base_url, api_key_env=api_key_env))
    return parsed


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
    if base_url is not None or api_key_env is not None:  # only where they apply
        check_spec(engine, base_url=base_url, api_key_env=api_key_env)
    parsed = parse_spec(engine)
    opts = EngineOptions(sampler=sampler, base_url=base_url, api_key_env=api_key_env, step_ms=step_ms)
    (parsed.kind.preflight or _preflight_spec)(parsed, engine, opts)


def open_engine_spec(spec: str, *, sampler: str | None = None, base_url: str | None = None,
                     api_key_env: str | None = None, device: str | None = None, seed: int = 0,
                     step_ms: float | None = None) -> EngineLike:
    """The engine a spec names (see the module docstring). `step_ms`: checkpoint engines only (the tiny models
    and folders), the least wall time per sampler step (SamplerConfig.step_ms)."""
    parsed = check_spec(spec, sampler=sampler, base_url=base_url, api_key_env=api_key_env)
    if step_ms and not parsed.takes("step_ms"):
        raise _step_error(parsed.text)
    return parsed.kind.open(parsed, EngineOptions(sampler=sampler, base_url=base_url, api_key_env=api_key_env,
                                                  device=device, seed=seed, step_ms=step_ms))


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


def _profile_over_http(spec: EngineSpec, name: str, kind: str, base_url: str | None) -> EngineLike:
    """`profile:NAME@http`: Mercury-style client (diffusing drafts for diffusion profiles) against the mock."""
    from engines.hosted.mercury import MercuryEngine
    from engines.hosted.openai_stream import OpenAIStreamEngine

    where = spec.where or ""
    mock = None
    if base_url is None and where.startswith("http:"):
        base_url = f"http://127.0.0.1:{where.split(':', 1)[1]}/v1"  # a number: check_spec saw to it
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
