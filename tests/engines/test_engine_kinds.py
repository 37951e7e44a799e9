"""The engine table (`engines.registry.KINDS`): every built-in form parses, checks, names and prices as it did; bad
specs get one line; the grammar is written once and quoted by the CLI and the docs; and a new hosted kind is one
module plus one `register()` (tests/engines/toy_engine_kind.py), which `voicelab run` and `voicelab probe` then take."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from engines import registry
from engines.errors import CheckpointError, EngineSpecError
from engines.registry import (
    KINDS,
    SPEC_GRAMMAR,
    check_engine_options,
    kind_of,
    open_engine_spec,
    parse_spec,
    spec_table,
)
from tests.engines import toy_engine_kind
from voicelab.analysis.price import LOCAL, price_for
from voicelab.cli.app import app
from voicelab.pipeline.config import PipelineConfig

ROOT = Path(__file__).resolve().parents[2]
TINY_AR = "engines/tiny/ar"
SAMPLING = frozenset({"sampler", "step_ms"})
HTTP = frozenset({"base_url", "api_key_env"})

# spec -> kind, name, flag, where, the options it takes, engine label, run name (slug)
BUILT_IN = [
    ("diffusion", "tiny", "diffusion", "", None, SAMPLING, "diffusion", "diffusion-threshold-pinned"),
    ("ar", "tiny", "ar", "", None, SAMPLING, "ar", "ar-autoregressive-pinned"),
    (TINY_AR, "folder", TINY_AR, "", None, SAMPLING, "ar", "ar-default-pinned"),
    ("replay:runs/t.jsonl", "replay", "runs/t.jsonl", "", None, frozenset(), "replay", "replay-default-pinned"),
    ("openai:gpt-4.1-nano", "openai", "gpt-4.1-nano", "", None, HTTP, "openai-gpt-4.1-nano",
     "openai-gpt-4.1-nano-pinned"),
    ("openai:meta-llama/Llama-3.1-8B", "openai", "meta-llama/Llama-3.1-8B", "", None, HTTP,
     "openai-meta-llama-Llama-3.1-8B", "openai-meta-llama-Llama-3.1-8B-pinned"),
    ("mercury:mercury-2", "mercury", "mercury-2", "", None, HTTP, "mercury-mercury-2", "mercury-mercury-2-pinned"),
    ("mercury:mercury-2+diffusing", "mercury", "mercury-2", "diffusing", None, HTTP, "mercury-mercury-2-diffusing",
     "mercury-mercury-2-diffusing-pinned"),
    ("profile:mercury-2", "profile", "mercury-2", "", None, frozenset(), "profile-mercury-2",
     "profile-mercury-2-pinned"),
    ("profile:mercury-2@http", "profile", "mercury-2", "", "http", frozenset({"base_url"}),
     "profile-mercury-2-http", "profile-mercury-2-http-pinned"),
    ("profile:mercury-2@http:8808", "profile", "mercury-2", "", "http:8808", frozenset({"base_url"}),
     "profile-mercury-2-http-8808", "profile-mercury-2-http-8808-pinned"),
]


@pytest.mark.parametrize(("spec", "kind", "name", "flag", "where", "options", "label", "slug"), BUILT_IN)
def test_every_built_in_form_parses_names_and_slugs_as_before(spec: str, kind: str, name: str, flag: str,
                                                             where: str | None, options: frozenset[str], label: str,
                                                             slug: str) -> None:
    parsed = parse_spec(spec)
    assert (parsed.kind.name, parsed.name, parsed.flag, parsed.where, parsed.options) == (kind, name, flag, where,
                                                                                          options)
    assert parse_spec(f"  {spec} ") == parsed  # specs are read stripped
    cfg = PipelineConfig(engine=spec)
    assert (cfg.engine_label(), cfg.slug()) == (label, slug)


def test_every_form_of_the_table_is_its_own_kind() -> None:
    for kind in KINDS:
        for form, _ in kind.forms:
            assert kind_of(form) is kind, form
    assert kind_of("no-such-thing") is registry.FOLDER and registry.find_kind("no-such-thing") is None
    assert [k.name for k in KINDS if k.hosted] == ["openai", "mercury", "profile"]
    assert {k.name: k.api_key_env for k in KINDS if k.api_key_env} == {"openai": "OPENAI_API_KEY",
                                                                      "mercury": "INCEPTION_API_KEY"}
    assert all(k.probe for k in KINDS)


def test_built_in_specs_open_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.hosted.mercury import MercuryEngine
    from engines.hosted.openai_stream import OpenAIStreamEngine

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("INCEPTION_API_KEY", "k")
    o = open_engine_spec("openai:gpt-4.1-nano")
    assert type(o) is OpenAIStreamEngine and o.base_url == "https://api.openai.com/v1"
    assert o.describe()["auth"] == "none"  # the usual variable is unset: a local server needs no key
    m = open_engine_spec(" mercury:mercury-2+diffusing", base_url="http://127.0.0.1:9/v1")
    assert type(m) is MercuryEngine and m.diffusing and m.kind == "diffusion" and m.describe()["auth"] == "bearer"
    assert m.base_url == "http://127.0.0.1:9/v1" and m.name == "mercury:mercury-2"
    plain = open_engine_spec("mercury:mercury-2")
    assert not plain.diffusing and plain.base_url == "https://api.inceptionlabs.ai/v1"


@pytest.mark.parametrize(("spec", "options", "error", "needle"), [
    ("gpt5", {}, CheckpointError, "gpt5: checkpoint folder not found (--engine takes diffusion | ar | PATH"),
    ("bogus:x", {}, EngineSpecError, "unknown engine 'bogus:x' (expected one of diffusion, ar, PATH, replay:PATH"),
    ("profile:nope", {}, EngineSpecError, "unknown profile 'nope'"),
    ("profile:mercury-2@ftp", {}, EngineSpecError, "expected profile:NAME@http or profile:NAME@http:PORT"),
    ("profile:mercury-2", {"sampler": "threshold"}, EngineSpecError, "takes no sampler (got 'threshold')"),
    ("profile:mercury-2", {"step_ms": 40.0}, EngineSpecError, "--step-ms: engine 'profile:mercury-2' has its own"),
    ("diffusion", {"base_url": "http://127.0.0.1:9/v1"}, EngineSpecError,
     "engine 'diffusion': --base-url applies only to openai:, mercury: and profile:NAME@http engines"),
    ("profile:mercury-2@http", {"api_key_env": "K"}, EngineSpecError,
     "--api-key-env applies only to openai: and mercury: engines"),
    ("openai:", {}, EngineSpecError, "engine 'openai:': a model name is needed, e.g. 'openai:MODEL'"),
    ("openai:m+x", {}, EngineSpecError, "unknown option '+x' (openai takes none)"),
    ("mercury:m+fast", {}, EngineSpecError, "unknown option '+fast' (mercury takes +diffusing)"),
    ("openai:m", {"api_key_env": "VOICELAB_UNSET_KEY_VAR"}, EngineSpecError,
     "environment variable VOICELAB_UNSET_KEY_VAR (the API key) is not set"),
    ("ar", {"sampler": "threshold"}, EngineSpecError, "--engine ar --sampler threshold: an autoregressive model"),
    ("diffusion", {"sampler": "greedy"}, EngineSpecError, "--sampler 'greedy': unknown (choose from threshold"),
    ("replay:no/such.jsonl", {"sampler": "threshold"}, EngineSpecError, "plays back its own recorded sampler"),
    ("replay:no/such.jsonl", {}, CheckpointError, "no/such.jsonl: trace file not found"),
])
def test_bad_specs_are_refused_in_one_line(spec: str, options: dict[str, Any], error: type[Exception],
                                           needle: str) -> None:
    with pytest.raises(error) as e:
        check_engine_options(spec, **options)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_open_checks_what_check_spec_checks() -> None:
    for spec, kw, needle in [("gpt5", {}, "unknown engine 'gpt5'"),
                             ("ar", {"sampler": "threshold"}, "autoregressive checkpoint cannot run"),
                             ("replay:t.jsonl", {"step_ms": 40.0}, "has its own timing"),
                             ("openai:m", {"sampler": "threshold"}, "takes no sampler")]:
        with pytest.raises(EngineSpecError, match=needle):
            open_engine_spec(spec, **kw)


def test_the_grammar_is_written_once_and_quoted() -> None:
    assert SPEC_GRAMMAR == ("diffusion | ar | PATH | replay:PATH | openai:MODEL | mercury:MODEL[+diffusing] | "
                            "profile:NAME | profile:NAME@http[:PORT]")
    command = typer.main.get_command(app)
    for name in ("run", "serve", "probe"):
        params = command.commands[name].params  # type: ignore[attr-defined]
        help_text = next(p.help for p in params if p.name == "engine")
        assert SPEC_GRAMMAR in help_text, name
    cli_md = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert cli_md.count(SPEC_GRAMMAR.replace("|", "\\|")) >= 3  # run, serve, probe (table cells escape pipes)
    engines_md = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
    assert spec_table() in engines_md, "docs/engines.md: paste engines.registry.spec_table() over its spec table"


def test_no_module_outside_the_registry_matches_engine_prefixes() -> None:
    """Other modules ask the table (`kind_of(spec)`, `.hosted`, `.price`, `.probe`), never the spec strings."""
    pattern = ("\"openai:", "'openai:", "\"mercury:", "'mercury:", "\"profile:", "'profile:", "(\"openai\"",
               "\"mercury\")")
    owned = ["voicelab/cli/options.py", "voicelab/cli/probe.py", "voicelab/analysis/price.py",
             "voicelab/pipeline/config.py", "voicelab/pipeline/options.py", "voicelab/pipeline/resources.py"]
    hits = [f"{f}: {p}" for f in owned for p in pattern if p in (ROOT / f).read_text(encoding="utf-8")]
    assert not hits, hits


def test_register_refuses_a_taken_or_bad_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "KINDS", list(KINDS))
    for kind, needle in [(replace(toy_engine_kind.TOY, prefix="openai"), "prefix 'openai:' is taken by 'openai'"),
                         (replace(toy_engine_kind.TOY, prefix="ar"), "is taken by 'tiny'"),
                         (replace(toy_engine_kind.TOY, prefix=None), "needs a prefix"),
                         (replace(toy_engine_kind.TOY, price="free"), "price one of local, model, unpublished")]:
        with pytest.raises(EngineSpecError, match=needle):
            registry.register(kind)
    assert registry.KINDS == KINDS


@pytest.fixture()
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[registry.EngineKind]:
    """The toy kind in the table for one test (the table restored after it)."""
    monkeypatch.setattr(registry, "KINDS", list(KINDS))
    monkeypatch.delenv("VOICELAB_TOY_KEY", raising=False)
    yield toy_engine_kind.register()


def test_a_registered_kind_is_checked_opened_named_and_priced_by_its_entry(toy: registry.EngineKind,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert kind_of("toy:ar") is toy and "toy:MODEL" in registry.spec_grammar()
    check_engine_options("toy:ar", base_url="http://127.0.0.1:9/v1")
    eng = open_engine_spec("toy:ar")
    assert isinstance(eng, toy_engine_kind.ToyEngine) and eng.name == "toy:ar"
    assert eng.base_url == toy_engine_kind.TOY_BASE_URL and eng.describe()["auth"] == "none"
    monkeypatch.setenv("VOICELAB_TOY_KEY", "k")  # the kind's default key variable, used once it is set
    assert open_engine_spec("toy:ar").describe()["auth"] == "bearer"
    assert PipelineConfig(engine="toy:ar", policy="final").slug() == "toy-ar-final"
    assert price_for({"engine_arg": "toy:ar"}) == toy_engine_kind.TOY_PRICE
    assert price_for({"engine_arg": "ar"}) is LOCAL  # the toy's price list is for its own specs only
    for spec, kw, needle in [("toy:", {}, "a model name is needed, e.g. 'toy:MODEL'"),
                             ("toy:ar", {"sampler": "threshold"}, "takes no sampler"),
                             ("toy:ar", {"step_ms": 40.0}, "has its own timing"),
                             ("diffusion", {"api_key_env": "K"}, "openai:, mercury: and toy: engines")]:
        with pytest.raises(EngineSpecError, match=needle):
            check_engine_options(spec, **kw)


def test_an_unregistered_kind_is_an_unknown_engine() -> None:
    with pytest.raises(EngineSpecError, match="unknown engine 'toy:ar'"):
        check_engine_options("toy:ar")


@pytest.fixture(scope="module")
def mock() -> Iterator[Any]:
    import torch

    torch.set_num_threads(1)
    from engines.simulated.mock_server import start_mock

    m = start_mock(seed=0)
    yield m
    m.stop()


def test_probe_takes_a_registered_kind(toy: registry.EngineKind, mock: Any, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["probe", "toy:ar", "--base-url", mock.url, "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("toy:ar: append-only (")
    report = json.loads((tmp_path / "p" / "probe.json").read_text())
    assert report["append_only"] and report["tokens"] > 0 and "prefix" in report["safe_policies"]


def test_probe_refuses_a_kind_that_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(registry, "KINDS", list(KINDS))
    registry.register(replace(toy_engine_kind.TOY, name="unprobed", prefix="unprobed", probe=False))
    result = CliRunner().invoke(app, ["probe", "unprobed:ar", "--out", str(tmp_path / "p")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    err = result.stderr.strip()
    assert err.splitlines() == [err] and "voicelab probe does not take unprobed engines" in err


@pytest.mark.slow
def test_run_takes_a_registered_kind(toy: registry.EngineKind, mock: Any, tmp_path: Path) -> None:
    """One short call through `toy:ar` against the loopback mock: the run names, opens and prices it by its entry."""
    result = CliRunner().invoke(app, ["run", "single_question", "--engine", "toy:ar", "--base-url", mock.url,
                                      "--stt", "transcript", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (summary,) = tmp_path.glob("*/summary.json")
    config = json.loads((summary.parent / "config.json").read_text())
    assert (config["engine"], config["engine_arg"], config["label"]) == ("toy-ar", "toy:ar", "toy-ar-pinned")
    assert config["engine_describe"]["engine"] == "toy:ar"
    price = json.loads(summary.read_text())["price"]
    assert price["source"] == toy_engine_kind.TOY_PRICE.source and price["output_tokens"] > 0
