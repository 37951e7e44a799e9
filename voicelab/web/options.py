"""What `voicelab serve` is set to (`ServeOptions`, and the `SessionLimits` each session runs under) and what
the page may choose: the engine, sampler, gate policy, VAD and STT choices it offers, their defaults, and the
configuration a page's choices make."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engines.registry import SAMPLER_NAMES, shipped_engines
from voicelab.gate import GateConfigError
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.web.errors import ApiError

STATIC_DIR = Path(__file__).parent / "static"
POLICY_CHOICES = ("pinned", "prefix", "final", "block", "stable:2", "stable:3", "pinned:stable:2", "pinned:block")
VAD_CHOICES = ("silero", "webrtc")
# "transcript" reads a fixture's ground truth; a live caller has none
STT_CHOICES = ("whisper", "whisper-base", "moonshine", "pocketsphinx")
OPTION_KEYS = ("engine", "sampler", "policy", "vad", "stt")

DEFAULT_RUNS_DIR = Path("runs/live")  # each live session's run folder goes under it


@dataclass(frozen=True)
class SessionLimits:
    """What each session may take: time to connect, silence from the page, length; how often it checks."""

    connect_timeout_s: float = 30.0  # the browser must connect (ICE + DTLS) within this
    idle_timeout_s: float = 15.0  # after the page's last message (it sends a keepalive every 2 s)
    max_duration_s: float = 3600.0
    flush_ms: float = 40.0  # canvas messages at most this often
    check_s: float = 0.5  # watchdog period
    hard_stop_s: float = 10.0  # a cancelled pipeline still running after this: cancel the session's task


class ServeError(ValueError):
    """A bad `voicelab serve` setting; the message names the field."""


@dataclass(frozen=True)
class ServeOptions:
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)  # the defaults the page starts from
    max_sessions: int = 2
    max_body_bytes: int = 64 * 1024  # an SDP offer with every candidate is a few kB
    limits: SessionLimits = field(default_factory=SessionLimits)
    static_dir: Path = STATIC_DIR
    loopback_ice: bool | None = None  # offer 127.0.0.1 as an ICE candidate; None: only if it is all we have
    runs_dir: Path | None = None  # each session writes its run folder under it (None: sessions leave none)
    allowed_origins: tuple[str, ...] = ()  # browser origins admitted besides the server's own ("*": any)

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ServeError(f"max_sessions: must be at least 1, got {self.max_sessions}")
        if self.max_body_bytes < 1024:
            raise ServeError(f"max_body_bytes: must be at least 1024, got {self.max_body_bytes}")
        if self.pipeline.stt not in STT_CHOICES:
            raise ServeError(f"stt: '{self.pipeline.stt}' needs a fixture's transcript; live calls use "
                             f"{', '.join(STT_CHOICES)}")
        if not self.static_dir.is_dir():
            raise ServeError(f"{self.static_dir}: static folder not found")


def engine_choices(default: str) -> list[str]:
    """The shipped tiny engines that are present, plus the serve default (which may be a folder)."""
    out = shipped_engines()
    if default not in out:
        out.insert(0, default)
    return out


def option_choices(opts: ServeOptions) -> dict[str, list[str]]:
    p = opts.pipeline
    policies = list(POLICY_CHOICES) if p.policy in POLICY_CHOICES else [p.policy, *POLICY_CHOICES]
    return {"engine": engine_choices(p.engine), "sampler": ["default", *SAMPLER_NAMES], "policy": policies,
            "vad": list(VAD_CHOICES), "stt": list(STT_CHOICES)}


def option_defaults(opts: ServeOptions) -> dict[str, str]:
    p = opts.pipeline
    return {"engine": p.engine, "sampler": p.sampler or "default", "policy": p.policy, "vad": p.vad, "stt": p.stt}


def resolve_config(opts: ServeOptions, choices: dict[str, list[str]], request_data: Any) -> PipelineConfig:
    """The serve defaults with the page's choices applied; only listed values are accepted."""
    if request_data is None:
        return opts.pipeline
    if not isinstance(request_data, dict):
        raise ApiError(400, "offer: field 'request_data' must be an object")
    changes: dict[str, Any] = {}
    for key, value in request_data.items():
        if key not in OPTION_KEYS:
            raise ApiError(400, f"offer: field 'request_data.{key}' is not one of {', '.join(OPTION_KEYS)}")
        if not isinstance(value, str) or value not in choices[key]:
            raise ApiError(400, f"offer: field 'request_data.{key}': {str(value)[:40]!r} is not offered "
                                f"(one of {', '.join(choices[key])})")
        changes[key] = None if key == "sampler" and value == "default" else value
    try:
        return replace(opts.pipeline, **changes)
    except (PipelineConfigError, GateConfigError) as e:
        raise ApiError(400, f"offer: {e}") from None
