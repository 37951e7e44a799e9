"""`voicelab probe ENGINE`: the commit-policy probe (engines/eval/probe.py): does the engine's stream revise text
it has shown, how late, and which gate policy would have been safe."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engines.errors import CheckpointError, EngineSpecError, EngineStreamError
from engines.registry import SPEC_GRAMMAR, kind_of
from voicelab.cli.common import fail
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.options import OptionsError, check_engine, check_out_dir


def verdict(report: dict) -> list[str]:
    """The lines the command prints for a probe report."""
    kind = "append-only" if report["append_only"] else "revising"
    lines = [f"{report['engine'].get('engine', '?')}: {kind} ({report['streams']} streams, {report['tokens']} "
             f"tokens, {report['revision_events']} revisions)"]
    if not report["append_only"]:
        lines.append(f"latest change {report['latest_change_ms_before_end']:.0f} ms before the end of a stream, "
                     f"up to {report['deepest_change']} positions behind the visible end")
    lines.append(f"safe policies: {', '.join(report['safe_policies']) or 'none'}")
    if report.get("smallest_safe_stable_k") is not None:
        lines.append(f"smallest safe stable:K: K = {report['smallest_safe_stable_k']}")
    return lines


def probe(
    engine: Annotated[str, typer.Argument(help=f"an engine spec: {SPEC_GRAMMAR} (PATH: a checkpoint folder)")],
    out: Annotated[Path | None, typer.Option(help="folder for probe.json and probe.png (default: "
                                             "runs/probe/<engine>)")] = None,
    sampler: Annotated[str | None, typer.Option(help="the tiny engines' sampler (threshold, low_confidence, "
                                                "revising, autoregressive)")] = None,
    base_url: Annotated[str | None, typer.Option(help="HTTP engines: the server's .../v1 URL")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="HTTP engines: the NAME of the variable holding the key")]
    = None,
) -> None:
    """Stream long structured answers, diff every state against the final one, say which policies were safe."""
    from engines.eval import probe as probe_mod
    from engines.registry import open_engine_spec

    try:
        kind = kind_of(engine)
        if not kind.probe:
            raise EngineSpecError(f"engine '{engine}': voicelab probe does not take {kind.name} engines")
        cfg = PipelineConfig(engine=engine, sampler=sampler, base_url=base_url, api_key_env=api_key_env)
        check_engine(cfg)
        out = out or Path("runs") / "probe" / cfg.slug().removesuffix("-pinned")
        check_out_dir(out)
        eng = open_engine_spec(engine, sampler=sampler, base_url=base_url, api_key_env=api_key_env)
    except (PipelineConfigError, OptionsError, CheckpointError, EngineSpecError) as e:
        fail(str(e))
    try:
        report = probe_mod.probe(eng, out_dir=out)
    except EngineStreamError as e:
        fail(f"{engine}: {e}", 1)
    finally:
        eng.close()
    for line in verdict(report):
        typer.echo(line)
    typer.echo(f"wrote {out / 'probe.json'} and {out / 'probe.png'}")
