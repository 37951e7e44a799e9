"""One validation of option combinations, shared by `voicelab run`, `voicelab sweep` and `voicelab serve`.

Checked up front, before any model loads or any folder is made, each refusal one line naming the option:
- the sampler is a known one, and fits the engine: an autoregressive (causal) checkpoint decodes only with
  `autoregressive`, a diffusion one never does (the tiny `ar` with `threshold` babbles "ononon…");
- a replay trace is readable UTF-8, every snapshot line well formed, and it holds at least one generation
  (else every turn would error); `--sampler` does not apply to it;
- a checkpoint folder's config.json is UTF-8 JSON with fields of the right types;
- output paths: a folder that is not a file and can be written; a report file that is not a folder.

Other engine specs (HTTP engines, profiles) go through the registry's own check (`engines.registry.check_spec`:
form, profile name, `+flags`, the key's variable set, where --base-url applies), which opens nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from engines.checkpoint import read_config
from engines.engine import TINY_MODELS
from engines.errors import CheckpointError
from engines.registry import check_spec
from engines.samplers import SAMPLERS
from engines.trace import read_trace
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError


class OptionsError(PipelineConfigError):
    """An option, or a pair of options, that cannot work; one line naming them."""


def check_sampler(engine: str, sampler: str | None, causal: bool | None) -> None:
    """A known sampler that fits the engine (`causal` None: the engine's kind is not known here)."""
    if sampler is None:
        return
    if sampler not in SAMPLERS:
        raise OptionsError(f"--sampler '{sampler}': unknown (choose from {', '.join(SAMPLERS)})")
    if causal is True and sampler != "autoregressive":
        raise OptionsError(f"--engine {engine} --sampler {sampler}: an autoregressive model decodes only with "
                           "'autoregressive' (or leave --sampler out)")
    if causal is False and sampler == "autoregressive":
        raise OptionsError(f"--engine {engine} --sampler {sampler}: a diffusion model needs a diffusion sampler "
                           f"({', '.join(s for s in SAMPLERS if s != 'autoregressive')})")


def check_engine(cfg: PipelineConfig) -> None:
    """The engine spec, its sampler, and what they name on disk (see the module doc)."""
    if cfg.base_url is not None or cfg.api_key_env is not None:  # only where they apply
        check_spec(cfg.engine, base_url=cfg.base_url, api_key_env=cfg.api_key_env)
    if cfg.engine.startswith("replay:"):
        path = Path(cfg.engine.split(":", 1)[1])
        if cfg.sampler is not None:
            raise OptionsError(f"--sampler '{cfg.sampler}': a replay trace plays back its own recorded sampler")
        _, gens = read_trace(path)  # TraceError (a CheckpointError) names the file and line
        if not gens:
            raise CheckpointError(f"{path}: trace holds no generation (a header alone answers nothing)")
        if not any(g.snapshots for g in gens):
            raise CheckpointError(f"{path}: no generation in the trace has a snapshot")
        if cfg.step_ms is not None:
            raise OptionsError("--step-ms: a replay trace plays back its own recorded timing")
        return
    folder = TINY_MODELS.get(cfg.engine, Path(cfg.engine))
    if cfg.step_ms is not None and not folder.is_dir():
        raise OptionsError(f"--step-ms: engine '{cfg.engine}' has its own timing (step pacing is for the tiny "
                           "models and checkpoint folders)")
    if folder.is_dir():
        check_sampler(cfg.engine, cfg.sampler, read_config(folder).causal)
    elif ":" in cfg.engine:  # EngineSpecError, one line
        check_sampler(cfg.engine, cfg.sampler, None)
        check_spec(cfg.engine, sampler=cfg.sampler, base_url=cfg.base_url, api_key_env=cfg.api_key_env)
    else:
        raise CheckpointError(f"{folder}: checkpoint folder not found (--engine takes diffusion, ar, a folder, "
                              "replay:TRACE.jsonl, openai:MODEL, mercury:MODEL[+diffusing] or profile:NAME[@http])")


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
