"""One CLI vocabulary: shared options, named help panels, ms units, hints for renamed options."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from voicelab.cli.app import app
from voicelab.cli.options import RENAMED, RUN_DEFAULTS

COMMAND = typer.main.get_command(app)
PANELS = {"engine", "gate", "speech and turns", "barge-in", "scale and faults", "output"}


def _options(name: str) -> dict[str, Any]:
    cmd = COMMAND.commands[name]  # type: ignore[attr-defined]
    return {p.name: p for p in cmd.params if p.param_type_name == "option"}


def test_every_run_option_sits_in_exactly_one_named_panel() -> None:
    opts = _options("run")
    panels = {name: getattr(o, "rich_help_panel", None) for name, o in opts.items()}
    assert set(panels.values()) <= PANELS, {n: p for n, p in panels.items() if p not in PANELS}
    assert {p for p in panels.values()} == PANELS


def test_serve_takes_every_pipeline_option_of_run() -> None:
    run, serve = _options("run"), _options("serve")
    assert set(RUN_DEFAULTS) <= set(run) and set(RUN_DEFAULTS) <= set(serve)
    for name in RUN_DEFAULTS:
        assert run[name].default == serve[name].default, name
        assert run[name].opts == serve[name].opts, name


def test_the_same_thing_has_the_same_name() -> None:
    for cmd in ("run", "serve", "sweep", "call"):
        assert "--out" in {o for p in _options(cmd).values() for o in p.opts}, cmd
    durations = [o for cmd in ("run", "serve") for p in _options(cmd).values() for o in p.opts
                 if o.endswith(("-secs", "-s"))]
    assert not durations, f"durations are in ms: {durations}"


@pytest.mark.parametrize(("argv", "needle"), [
    (["run", "--vad-stop-secs", "0.2"], "--vad-stop-secs is now --vad-stop-ms"),
    (["serve", "--runs-dir", "x"], "--runs-dir is now --out"),
    (["sweep", "--out", "x", "--cpus-per-cell", "2"], "--cpus-per-cell is now --cpus-per-task"),
    (["serve", "--repeat", "3"], "--repeat: not for a live call"),
    (["serve", "--clip-grid-ms", "0"], "--clip-grid-ms: not for a live call"),
])
def test_old_or_inapplicable_options_get_one_line(argv: list[str], needle: str) -> None:
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output


def test_renamed_options_point_at_options_that_exist() -> None:
    names = {o for cmd in ("run", "serve", "sweep") for p in _options(cmd).values() for o in p.opts}
    for hint in RENAMED.values():
        assert hint.split()[0] in names, hint


def test_turn_silences_are_milliseconds() -> None:
    from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
    from voicelab.rules.turn_kinds import TurnSpec

    assert PipelineConfig(turn="timeout:600").turn_spec() == TurnSpec("timeout", 0.6)
    assert PipelineConfig(turn="smart:1500").turn_spec() == TurnSpec("smart", 1.5)
    with pytest.raises(PipelineConfigError, match="milliseconds"):
        PipelineConfig(turn="timeout:0.6")
