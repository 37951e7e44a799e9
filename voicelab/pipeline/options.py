"""One validation of option combinations, shared by `voicelab run`, `voicelab sweep` and `voicelab serve`.

Checked up front, before any model loads or any folder is made, each refusal one line naming the option:
- the engine options: `engines.registry.check_engine_options` (sampler fits engine, traces and checkpoint
  folders readable, HTTP specs well formed), which opens nothing;
- output paths: a folder that is not a file and can be written; a report file that is not a folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from engines.errors import EngineSpecError
from engines.registry import check_engine_options
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError


class OptionsError(PipelineConfigError, EngineSpecError):
    """An option, or a pair of options, that cannot work; one line naming them."""


def check_engine(cfg: PipelineConfig) -> None:
    """The engine spec, its sampler, and what they name on disk (`engines.registry.check_engine_options`)."""
    try:
        check_engine_options(cfg.engine, sampler=cfg.sampler, step_ms=cfg.step_ms, base_url=cfg.base_url,
                             api_key_env=cfg.api_key_env)
    except EngineSpecError as e:
        raise OptionsError(str(e)) from None


def check_out_dir(path: Path, option: str = "--out") -> None:
    """A folder that is not a file and that this process can write (created if missing)."""
    if path.exists() and not path.is_dir():
        raise OptionsError(f"{option} {path}: is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".voicelab-write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise OptionsError(f"{option} {path}: cannot write there ({e.strerror or e})") from None


def check_out_file(path: Path, option: str = "--out") -> None:
    """A file path whose folder can be written and that is not itself a folder."""
    if path.is_dir():
        raise OptionsError(f"{option} {path}: is a folder; give a file name such as {path / 'report.html'}")
    check_out_dir(path.parent if str(path.parent) else Path("."), option)
