"""`PipelineConfig`: which engine, sampler, gate policy, phrase shaper, STT, VAD, turn and barge-in strategies.

Defaults (each field's comment says why): Silero VAD (stop_secs 0.2, pipecat's default), streamed Whisper
tiny.en with the callers' language model (`PipelineConfig().stt` and `.stt_lm`: the one place the default
recogniser is named), the turn end `decide` (smart-turn v3 and the decision model, re-scored as the silence
grows), barge-in `pause` (pause the bot at the caller's voice, then stop for good or resume), the pinned gate
with a short first chunk, Piper with leading silence trimmed, caller clips on a 160 ms grid.

Plain Python (no pipecat): the CLI, the run writer and the web app validate options through it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from engines.registry import parse_spec
from voicelab.gate import GatePolicy, ShaperParams
from voicelab.pcm import SAMPLE_RATE
from voicelab.rules.tool_reason import ToolReasonError
from voicelab.rules.tool_reason import parse_mode as parse_tool_reason
from voicelab.rules.turn_kinds import BargeInSpec, TurnSpec, TurnSpecError, parse_barge_in, parse_turn
from voicelab.speech.caller_lm import DEFAULT_LM_WEIGHT

STT_CHOICES = ("whisper", "whisper-base", "moonshine", "pocketsphinx", "transcript")
# whole-utterance recognizers behind voicelab.speech.streaming (voicelab.speech.recognizers.make_recognizer)
STREAMED_STT = ("whisper", "whisper-base", "moonshine")
STT_HELP = ("whisper (tiny.en from a package, streamed passes), whisper-base (Whisper base, multilingual, forced to "
            "English, from two packages: the same passes), moonshine (Moonshine base from a package, the same "
            "passes: more accurate on real voices, ~3x the cost), pocketsphinx (streaming, fast, inaccurate) or "
            "transcript (the fixture's own text: STT out of the budget)")


DEFAULT_GREETING = "Riverside Bike Works, how can I help?"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# how the caller's audio reaches the pipeline (voicelab.pipeline.transport.line_codec)
LINES = ("direct", "mulaw8k")
CLIP_GRID_UNIT_MS = 160  # lcm(20 ms player frames, 32 ms Silero windows)


class PipelineConfigError(ValueError):
    """A bad pipeline setting; the message names the field."""


@dataclass
class PipelineConfig:
    """One configuration of the pipeline (see the module doc). `label` names it in reports."""

    engine: str = "diffusion"  # an engine spec (engines.registry.SPEC_GRAMMAR): diffusion, ar, a folder, replay:, …
    base_url: str | None = None  # HTTP engines: the server's …/v1 URL (None: the provider's own)
    api_key_env: str | None = None  # HTTP engines: the NAME of the variable holding the key, never the key
    sampler: str | None = None  # None: the engine's default (threshold / autoregressive)
    policy: str = "pinned"
    shaper: ShaperParams = field(default_factory=ShaperParams)
    # STT_CHOICES; the pipeline's recogniser: `bench stt` marks its rows (with stt_lm) as the default's
    stt: str = "whisper"
    # Whisper's final pass starts at the VAD's first silent frame, not at its confirmed stop (voicelab.speech.streaming);
    # off by measurement: that frame can fall inside a soft last sound ("americans" read "america")
    stt_early_final: bool = False
    stt_beam: int = 1  # Whisper's beam size; 1 (greedy) by measurement (voicelab/speech/whisper.py)
    # Whisper's 5 best readings re-ranked by the callers' language model at this weight (voicelab.speech.caller_lm;
    # 0: greedy, no model); on by measurement (README, Recognition)
    stt_lm: float = DEFAULT_LM_WEIGHT
    vad: str = "silero"  # or "webrtc"
    vad_start_secs: float = 0.2
    # pipecat's default. 0.12 s ended 80 ms sooner but Silero can hear a soft last consonant under noise as 120 ms
    # of silence: the final pass then reads a cut word ("and so my fellow america", judged complete) (README)
    vad_stop_secs: float = 0.2
    barge_in: str = "pause"  # measured: stop 247 ms, 0 false barge-ins; words:3 stopped in ~780 ms
    turn: str = "decide"
    # start the engine at the VAD stop, held until the turn is confirmed; off by default because on a 2-core
    # CPU it competes with the final recognition pass (measured: FAR p50 94 ms worse, README)
    preemptive: bool = False
    sample_rate: int = SAMPLE_RATE
    keep_leading_ms: float | None = 20.0  # Piper's leading silence kept before each chunk
    no_reply_timeout_s: float = 6.0
    greeting: str = DEFAULT_GREETING  # spoken at call start (voicelab.pipeline.processors.greeting); "" for none
    # speculative synthesis (voicelab.rules.speculative): uncommitted text whose positions' confidence passes this
    # goes to TTS early, its audio held until the gate commits it unchanged; None: off
    speculative_tts: float | None = None
    # checkpoint engines: the least wall time per sampler step (ms), the tiny model standing in for a real model's
    # step time (SamplerConfig.step_ms); None: as fast as the CPU goes
    step_ms: float | None = None
    # destructive tool calls need a reason (voicelab.rules.tool_reason): words, confirm (ask when unsure), confidence[:BAR] or off
    tool_reason: str = "words"
    # caller clips start on this grid of the call clock (ms; 0: at their exact sample). 160 ms is the least common
    # multiple of the player's 20 ms frames and Silero's 32 ms windows: a clip then meets the same frame and window
    # boundaries in every run, so the VAD and Whisper get the same samples and read the same words (README)
    clip_grid_ms: int = 160
    # the caller's audio as the agent hears it: "direct" (the clips as recorded) or "mulaw8k" (through a telephone
    # line's 8 kHz µ-law and back, voicelab.pipeline.transport.line_codec: the same audio `voicelab call` puts
    # on the line)
    line: str = "direct"
    seed: int = 0
    label: str | None = None

    def __post_init__(self) -> None:
        GatePolicy.parse(self.policy)
        if self.stt not in STT_CHOICES:
            raise PipelineConfigError(f"stt: '{self.stt}' is not one of {', '.join(STT_CHOICES)}")
        if not 1 <= self.stt_beam <= 16:
            raise PipelineConfigError(f"stt_beam: {self.stt_beam} is not in 1..16")
        if not 0 <= self.stt_lm <= 10:
            raise PipelineConfigError(f"stt_lm: {self.stt_lm} is not in 0..10 (the language model's weight)")
        if self.vad not in ("silero", "webrtc"):
            raise PipelineConfigError(f"vad: '{self.vad}' is not silero or webrtc")
        self.barge_in_spec()
        self.turn_spec()
        if not 0.0 < self.vad_stop_secs <= 3.0:
            raise PipelineConfigError(f"vad_stop_secs: {self.vad_stop_secs} is not in (0, 3]")
        if not 0.0 < self.vad_start_secs <= 1.0:
            raise PipelineConfigError(f"vad_start_secs: {self.vad_start_secs} is not in (0, 1]")
        if self.sample_rate != SAMPLE_RATE:
            raise PipelineConfigError(f"sample_rate: the pipeline runs at {SAMPLE_RATE} Hz "
                                      "(Silero, smart-turn, pocketsphinx)")
        if self.api_key_env is not None and not _ENV_NAME.fullmatch(self.api_key_env):
            raise PipelineConfigError("api_key_env: not an environment variable name (give the variable's name, "
                                      "such as OPENAI_API_KEY, never the key itself; it is not echoed here)")
        if self.base_url is not None:
            try:
                url = urlsplit(self.base_url)
            except ValueError:
                raise PipelineConfigError("base_url: not a URL (expected http(s)://HOST[:PORT]/v1)") from None
            if url.username or url.password or url.query:  # checked first: such a URL is never echoed
                raise PipelineConfigError("base_url: holds credentials or a query; config.json must hold no "
                                          "secrets (pass the key's variable with --api-key-env)")
            if url.scheme not in ("http", "https") or not url.hostname:
                raise PipelineConfigError(f"base_url: '{self.base_url}' is not an http(s)://HOST[:PORT]/… URL")
        try:
            parse_tool_reason(self.tool_reason)
        except ToolReasonError as e:
            raise PipelineConfigError(str(e)) from None
        if self.speculative_tts is not None and not 0.0 < self.speculative_tts <= 1.0:
            raise PipelineConfigError(f"speculative_tts: {self.speculative_tts} is not a confidence in (0, 1]")
        if self.clip_grid_ms < 0 or self.clip_grid_ms % CLIP_GRID_UNIT_MS:
            raise PipelineConfigError(f"clip_grid_ms: {self.clip_grid_ms} is not 0 or a multiple of "
                                      f"{CLIP_GRID_UNIT_MS} (20 ms frames and 32 ms VAD windows both fit in it)")
        if self.line not in LINES:
            raise PipelineConfigError(f"line: '{self.line}' is not one of {', '.join(LINES)}")
        if self.step_ms is not None and not 0.0 < self.step_ms <= 2000.0:
            raise PipelineConfigError(f"step_ms: {self.step_ms} is not in (0, 2000] ms")

    def barge_in_spec(self) -> BargeInSpec:
        """The barge-in kind and its word count (`voicelab.rules.turn_kinds.BARGE_IN_KINDS`)."""
        try:
            return parse_barge_in(self.barge_in)
        except TurnSpecError as e:
            raise PipelineConfigError(str(e)) from None

    def barge_in_words(self) -> int | None:
        """None for VAD or pause barge-in, else the word count."""
        return self.barge_in_spec().words

    def turn_spec(self) -> TurnSpec:
        """The turn-end kind and the silence its spec gives, in s (`voicelab.rules.turn_kinds.TURN_KINDS`); the
        spec gives milliseconds (`timeout:600`), like every duration the lab takes."""
        try:
            return parse_turn(self.turn)
        except TurnSpecError as e:
            raise PipelineConfigError(str(e)) from None

    def engine_label(self) -> str:
        """The engine's kind names it (engines.registry.KINDS): diffusion, ar, replay, the folder's name, or
        KIND-NAME for HTTP and profile specs (folder-safe)."""
        return parse_spec(self.engine).label

    def slug(self) -> str:
        """Short config name for folder names, e.g. diffusion-threshold-pinned."""
        if self.label:
            return self.label
        policy = self.policy.replace(":", "")
        engine = parse_spec(self.engine)
        sampler = self.sampler or engine.kind.default_samplers.get(engine.name, "default")
        spec = [f"spec{self.speculative_tts:g}"] if self.speculative_tts is not None else []
        spec += [f"step{self.step_ms:g}ms"] if self.step_ms is not None else []
        spec += [self.line] if self.line != "direct" else []
        if engine.kind.fixed_decoding:  # no sampler to name: the decoding is the engine's
            return "-".join([self.engine_label(), policy, *spec])
        return "-".join([self.engine_label(), sampler, policy, *spec])

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shaper"] = asdict(self.shaper)
        return d
