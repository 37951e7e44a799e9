"""The `voicelab` command line (typer): every command, one error helper, one logging setup."""

from voicelab.cli.app import app

__all__ = ["app"]
