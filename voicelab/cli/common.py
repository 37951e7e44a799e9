"""What every command shares: the one error exit and the one logging setup."""

from __future__ import annotations

import logging
import sys
from typing import NoReturn

import typer
from loguru import logger

# exit status of a command refused for bad input (typer's own usage errors exit 2 as well)
EXIT_BAD_INPUT = 2


def fail(msg: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """One line on stderr (`error: ...`, naming the input and what is wrong), no traceback, a non-zero exit."""
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code)


def quiet_pipecat_logs(level: str = "WARNING") -> None:
    """Pipecat logs every frame decision at DEBUG through loguru; a command keeps `level` and above."""
    logger.remove()
    logger.add(sys.stderr, level=level)
    logging.getLogger("piper").setLevel(logging.WARNING)
