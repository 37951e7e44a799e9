"""`voicelab mock-engine`: the loopback mock of a hosted engine (engines/simulated/mock_server.py), to rehearse the
OpenAI-compatible and Mercury paths without keys: `voicelab run --engine openai:gemini-2.5-flash
--base-url http://127.0.0.1:8808/v1`, or `--engine profile:NAME@http:8808`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engines.errors import CheckpointError, EngineSpecError
from voicelab.cli.common import fail

SHAPES = ("replace", "append")


def mock_engine(
    host: Annotated[str, typer.Option(help="loopback address to listen on (127.0.0.1, ::1 or localhost only)")] = (
        "127.0.0.1"),
    port: Annotated[int, typer.Option(help="TCP port")] = 8808,
    shape: Annotated[str, typer.Option(help="Mercury `diffusing` chunks: replace (each chunk the whole draft) or "
                                       "append (finished text only, as deltas)")] = "replace",
    jitter: Annotated[float, typer.Option(help="spread of the gaps between tokens, relative (0: a metronome)")] = 0.2,
    seed: Annotated[int, typer.Option(help="seed of the jitter and of the diffusion drafts' wrong guesses")] = 0,
    trace: Annotated[Path | None, typer.Option(help="answer from a recorded trace (TRACE.jsonl) instead of the "
                                               "tiny engines")] = None,
) -> None:
    """Serve the mock engine on loopback: chat completions over SSE, Mercury's diffusing drafts, timing from
    the profiles (`voicelab profiles`), faults on demand (X-Mock-Fault: 429, 500, hang, stall, disconnect,
    malformed)."""
    from engines.simulated.mock_server import serve_mock

    if not 0 < port < 65536:
        fail(f"--port {port}: not a TCP port (1-65535)")
    if shape not in SHAPES:
        fail(f"--shape '{shape}': one of {', '.join(SHAPES)}")
    if not 0.0 <= jitter <= 1.0:
        fail(f"--jitter {jitter}: expected a fraction in [0, 1]")
    if trace is not None and not trace.is_file():
        fail(f"--trace {trace}: no such file")
    try:  # serve_mock refuses a non-loopback host before anything loads
        serve_mock(host, port, trace=trace, seed=seed, jitter=jitter, shape=shape)
    except (EngineSpecError, CheckpointError) as e:
        fail(str(e))
    except OSError as e:  # the port is taken, or not ours to bind
        fail(f"--port {port}: cannot listen on {host} ({e.strerror or e})")
