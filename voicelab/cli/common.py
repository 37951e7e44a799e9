"""What every command shares: the one error exit, the one logging setup and the one thread count."""

from __future__ import annotations

import logging
import sys
from typing import NoReturn

import typer
from loguru import logger

from voicelab.cpu_threads import CpuThreadsError, cpu_threads

# exit status of a command refused for bad input (typer's own usage errors exit 2 as well)
EXIT_BAD_INPUT = 2


def fail(msg: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """One line on stderr (`error: ...`, naming the input and what is wrong), no traceback, a non-zero exit."""
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code)


def threads_option(value: int | None) -> int:
    """A command's `--threads`: as given, else `VOICELAB_CPU_THREADS`, else 2; a bad value is one line."""
    if value is None:
        try:
            return cpu_threads()
        except CpuThreadsError as e:
            fail(str(e))
    if value < 1:
        fail("--threads must be at least 1")
    return value


def quiet_pipecat_logs(level: str = "WARNING") -> None:
    """Pipecat logs every frame decision at DEBUG through loguru; a command keeps `level` and above."""
    logger.remove()
    logger.add(sys.stderr, level=level)
    logging.getLogger("piper").setLevel(logging.WARNING)
