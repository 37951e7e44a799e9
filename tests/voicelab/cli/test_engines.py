"""The engine commands (`voicelab profiles`, `probe`, `mock-engine`), engine selection through the registry
(`--engine SPEC --base-url --api-key-env`, `--matrix NAME`), and a run through a timing profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engines.simulated.profiles import PROFILES
from voicelab.cli.app import app
from voicelab.pipeline.config import PipelineConfig
from voicelab.runs.matrix import default_matrix


def _refused(argv: list[str]) -> str:
    """The one stderr line of a refused command (non-zero exit, no traceback)."""
    result = CliRunner().invoke(app, argv)
    err = result.stderr.strip()
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


def test_profiles_lists_every_profile_with_its_source() -> None:
    result = CliRunner().invoke(app, ["profiles", "--wide"])
    assert result.exit_code == 0, result.output
    for name, p in PROFILES.items():
        line = next(ln for ln in result.stdout.splitlines() if f" {name} " in ln)
        assert f"{p.tokens_per_s:,.0f}" in line and ("yes" if p.vendor_figure else "no") in line
    assert "$0.25" in result.stdout  # mercury-2's published input price


@pytest.mark.slow
def test_probe_flags_the_tiny_ar_engine_append_only(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["probe", "ar", "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("ar: append-only (")
    report = json.loads((tmp_path / "p" / "probe.json").read_text())
    assert report["append_only"] and report["revision_events"] == 0 and report["tokens"] >= 200
    assert "prefix" in report["safe_policies"] and (tmp_path / "p" / "probe.png").stat().st_size > 0


def test_probe_refuses_bad_engines_in_one_line(tmp_path: Path) -> None:
    assert "unknown profile 'nope'" in _refused(["probe", "profile:nope", "--out", str(tmp_path / "p")])
    assert "autoregressive" in _refused(["probe", "ar", "--sampler", "threshold", "--out", str(tmp_path / "p")])


def test_mock_engine_refuses_a_non_loopback_host() -> None:
    assert "not a loopback address" in _refused(["mock-engine", "--host", "0.0.0.0"])
    assert "--shape 'sideways'" in _refused(["mock-engine", "--shape", "sideways"])


@pytest.mark.parametrize(("argv", "needle"), [
    (["--engine", "profile:nope"], "unknown profile 'nope'"),
    (["--engine", "profile:mercury-2", "--sampler", "threshold"], "takes no sampler"),
    (["--engine", "diffusion", "--base-url", "http://127.0.0.1:9/v1"], "--base-url applies only"),
    (["--engine", "openai:m", "--base-url", "https://user:secret@example.com/v1"], "no secrets"),
    (["--engine", "openai:m", "--api-key-env", "VOICELAB_UNSET_KEY_VAR"], "VOICELAB_UNSET_KEY_VAR"),
    (["--matrix", "profiles:nope"], "unknown profile 'nope'"),
    (["--matrix", "--stt", "bogus"], "stt: 'bogus'"),  # a bare --matrix does not swallow the next option
    (["--matrix", "no_such_fixture"], "no_such_fixture"),  # nor a fixture name
])
def test_run_engine_options_refused_in_one_line(tmp_path: Path, argv: list[str], needle: str) -> None:
    err = _refused(["run", "single_question", "--out", str(tmp_path / "o"), *argv])
    assert needle in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_a_key_given_as_api_key_env_is_never_echoed(tmp_path: Path) -> None:
    err = _refused(["run", "--engine", "openai:m", "--api-key-env", "sk-live-abcdef123", "--out", str(tmp_path)])
    assert "never the key" in err and "abcdef" not in err and "sk-" not in err


def test_engine_labels_and_matrices() -> None:
    cfg = PipelineConfig(engine="openai:meta-llama/Llama-3.1-8B", base_url="http://127.0.0.1:8000/v1",
                         api_key_env="VLLM_KEY")
    assert (cfg.engine_label(), cfg.slug()) == ("openai-meta-llama-Llama-3.1-8B", "openai-meta-llama-Llama-3.1-8B-pinned")
    assert cfg.to_dict()["api_key_env"] == "VLLM_KEY"  # the variable's name is what config.json keeps
    assert PipelineConfig(engine="profile:mercury-2@http:8808", policy="final").slug() == "profile-mercury-2-http-8808-final"
    m = default_matrix(PipelineConfig(), "profiles")
    assert len(m) == 2 * len(PROFILES)
    assert {c.engine for c in m} == {f"profile:{n}" for n in PROFILES}
    pol = {(c.engine, c.policy) for c in m}
    assert ("profile:gpt-oss-20b", "pinned") in pol and ("profile:mercury-2", "pinned:block") in pol
    assert ("profile:mercury-2", "final") in pol
    assert [c.engine for c in default_matrix(PipelineConfig(), "profiles:celeris-1,gpt-4.1-mini")] == [
        "profile:celeris-1", "profile:celeris-1", "profile:gpt-4.1-mini", "profile:gpt-4.1-mini"]
    default = default_matrix(PipelineConfig())  # the default matrix is the tiny engines' side-by-side
    assert default == default_matrix(PipelineConfig(), "default")
    assert not any(c.engine.startswith("profile:") for c in default)


@pytest.mark.slow
def test_run_through_a_profile_measures_its_own_timing(tmp_path: Path) -> None:
    """One short call through profile:gemini-2.5-flash (0.47 s to first text, 221 tokens/s): the run's own
    events give the profile's TTFT and the new first-token-to-audio figure."""
    result = CliRunner().invoke(app, ["run", "single_question", "--engine", "profile:gemini-2.5-flash", "--stt",
                                      "transcript", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (summary,) = tmp_path.glob("*/summary.json")
    s = json.loads(summary.read_text())
    config = json.loads((summary.parent / "config.json").read_text())
    assert config["engine"] == "profile-gemini-2.5-flash" and config["engine_arg"] == "profile:gemini-2.5-flash"
    assert config["pipeline"]["api_key_env"] is None
    first = PROFILES["gemini-2.5-flash"].first_answer_s * 1000
    # a shared CPU: the profile's wait is a floor; loose above it (the target's ±20 ms is a benchmark's job)
    assert first - 5 <= s["engine_figures"]["ttft_ms_p50"] < first + 250
    assert s["first_token_to_audio_ms"]["n"] == 1 and s["first_token_to_audio_ms"]["p50"] > 0
    assert s["revisions"]["audible"] == 0


def test_bench_refuses_a_bad_count_in_one_line() -> None:
    res = CliRunner().invoke(app, ["bench", "engines", "--n", "0"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.output.strip().startswith("error: --n, --threads and --rounds must be at least 1")
