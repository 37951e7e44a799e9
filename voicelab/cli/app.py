"""The `voicelab` command line: one entry point, each command a thin wrapper over a module."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

# pipecat logs a banner and every frame decision through loguru's default handler; the command
# line keeps warnings and errors (set LOGURU_LEVEL=DEBUG to see everything)
os.environ.setdefault("LOGURU_LEVEL", "WARNING")

import typer  # noqa: E402

from voicelab.cli import compare, mock_engine, probe, profiles, report, run, serve  # noqa: E402
from voicelab.cli.common import fail  # noqa: E402
from voicelab.cli.fixtures import fixtures_app  # noqa: E402

app = typer.Typer(help="voicelab: a voice-agent latency lab for diffusion text engines.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
app.command("run", cls=run.RunCommand)(run.run)
app.command("serve")(serve.serve)
app.add_typer(fixtures_app, name="fixtures")
app.command("report")(report.report)
app.command("sweep")(report.sweep)
app.command("compare")(compare.compare)
app.command("mock-engine")(mock_engine.mock_engine)
app.command("probe")(probe.probe)
app.command("profiles")(profiles.profiles)

bench_app = typer.Typer(help="Benchmarks (speed and memory targets live here, not in unit tests).",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("engines")
def bench_engines(
    n: Annotated[int, typer.Option(help="held-out prompts")] = 200,
    json_out: Annotated[bool, typer.Option("--json", help="print a JSON list")] = False,
    out: Annotated[Path | None, typer.Option(help="also write the JSON result here")] = None,
    threads: Annotated[int, typer.Option(help="torch threads")] = 2,
) -> None:
    """Every engine and sampler on the same held-out prompts: tokens/s, first commit, correctness."""
    from engines import bench
    from engines.errors import CheckpointError

    argv = ["--n", str(n), "--threads", str(threads)] + (["--json"] if json_out else [])
    argv += ["--out", str(out)] if out else []
    try:
        bench.main(argv)
    except CheckpointError as e:
        fail(str(e))


@app.command("train")
def train(
    out: Annotated[Path, typer.Option(help="folder for the tiny models")] = Path("engines/tiny"),
    ar_steps: Annotated[int | None, typer.Option(help="autoregressive training steps")] = None,
    diff_steps: Annotated[int | None, typer.Option(help="diffusion adaptation steps")] = None,
) -> None:
    """Train the tiny AR model, then adapt the diffusion model from it (CPU, about 30 minutes)."""
    from engines import train as tr

    argv = ["--out", str(out)]
    argv += ["--ar-steps", str(ar_steps)] if ar_steps is not None else []
    argv += ["--diff-steps", str(diff_steps)] if diff_steps is not None else []
    tr.main(argv)


def main() -> None:  # pragma: no cover - console entry
    app(prog_name="voicelab")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
