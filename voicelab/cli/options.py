"""One vocabulary for the commands: every pipeline option defined once, in a named help panel, and used by
`voicelab run` and `voicelab serve` alike; renamed options answer with a one-line hint to the new name.

Units: every duration an option takes is in milliseconds (`--vad-stop-ms`, `--max-hold-ms`, `--step-ms`,
`--turn timeout:MS`); every output folder is `--out`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer._click import core as click_core  # typer carries its own click: its errors are the ones it reports
from typer._click.exceptions import UsageError
from typer.core import TyperCommand

from engines.registry import SPEC_GRAMMAR
from engines.simulated.profiles import PROFILES
from voicelab.gate import ShaperParams
from voicelab.pipeline.config import STT_HELP, PipelineConfig
from voicelab.rules.tool_reason import TOOL_REASON_HELP
from voicelab.rules.turn_kinds import BARGE_IN_HELP, TURN_HELP

ENGINE, GATE, SPEECH, BARGE, SCALE, OUTPUT = ("engine", "gate", "speech and turns", "barge-in", "scale and faults",
                                              "output")

# old name -> the hint printed instead of click's "no such option"
RENAMED = {
    "--vad-stop-secs": "--vad-stop-ms (milliseconds: 0.2 s is --vad-stop-ms 200)",
    "--vad-start-secs": "--vad-start-ms (milliseconds: 0.2 s is --vad-start-ms 200)",
    "--runs-dir": "--out",
    "--cpus-per-cell": "--cpus-per-task",
    "--cpus-per-call": "--cpus-per-task",
}


class HintingCommand(TyperCommand):
    """A command whose parser answers an old option name with its new one (one line, exit 2)."""

    not_here: dict[str, str] = {}  # options of a sibling command that do not apply here -> why

    def parse_args(self, ctx: click_core.Context, args: list[str]) -> list[str]:
        for a in args:
            name = a.split("=", 1)[0]
            if name in RENAMED:
                raise UsageError(f"{name} is now {RENAMED[name]}", ctx)
            if name in self.not_here:
                raise UsageError(f"{name}: {self.not_here[name]}", ctx)
        return super().parse_args(ctx, args)


ENGINE_HELP = (f"an engine spec: {SPEC_GRAMMAR} (PATH: a checkpoint folder; profiles: {', '.join(PROFILES)}, see "
               "`voicelab profiles`; docs/engines.md)")
Engine = Annotated[str, typer.Option(help=ENGINE_HELP, rich_help_panel=ENGINE)]
BaseUrl = Annotated[str | None, typer.Option(
    help="HTTP engines: the server's .../v1 URL (a vLLM, llama.cpp, Ollama or `voicelab mock-engine` server; "
         "default: the provider's own)", rich_help_panel=ENGINE)]
ApiKeyEnv = Annotated[str | None, typer.Option(
    help="HTTP engines: the NAME of the environment variable holding the API key (the key itself is never "
         "written anywhere)", rich_help_panel=ENGINE)]
Sampler = Annotated[str | None, typer.Option(
    help="threshold, low_confidence, revising, autoregressive (default: the engine's own)", rich_help_panel=ENGINE)]
StepMs = Annotated[float | None, typer.Option(
    metavar="MS", help="tiny models and checkpoint folders: each sampler step takes at least MS of wall time, so "
    "the tiny model stands in for a real model's step time (an 8B model on a GPU: tens of ms); its answers do "
    "not change", rich_help_panel=ENGINE)]
Policy = Annotated[str, typer.Option(help="gate policy: final, prefix, stable:K, block, pinned, pinned:X",
                                     rich_help_panel=GATE)]
FirstChunkWords = Annotated[int, typer.Option(help="phrase shaper: words in a short first chunk",
                                              rich_help_panel=GATE)]
MinWords = Annotated[int, typer.Option(help="phrase shaper: words before a clause cut", rich_help_panel=GATE)]
MaxWords = Annotated[int, typer.Option(help="phrase shaper: longest chunk in words", rich_help_panel=GATE)]
MaxHoldMs = Annotated[float, typer.Option(help="phrase shaper: longest wait for a cut (ms)", rich_help_panel=GATE)]
SpeculativeTts = Annotated[float | None, typer.Option(
    metavar="THRESHOLD", help="speculative synthesis for revising samplers: text not committed yet whose "
    "positions' confidence is >= THRESHOLD (0-1] goes to TTS early; its audio plays only if the gate commits it "
    "unchanged, else it is dropped unheard", rich_help_panel=GATE)]
ToolReason = Annotated[str, typer.Option(help=f"destructive tool calls need a reason: {TOOL_REASON_HELP}",
                                         rich_help_panel=GATE)]
Stt = Annotated[str, typer.Option(help=STT_HELP, rich_help_panel=SPEECH)]
SttEarlyFinal = Annotated[bool, typer.Option(
    help="Whisper: start the final pass at the VAD's first silent frame instead of its confirmed stop; off by "
         "measurement: it can cut a soft last sound", rich_help_panel=SPEECH)]
SttBeam = Annotated[int, typer.Option(
    help="Whisper's beam size (1: greedy, the default by measurement; a beam alone repeats short sentences)",
    rich_help_panel=SPEECH)]
SttLm = Annotated[float, typer.Option(
    help="Whisper: re-rank its 5 best readings by the callers' language model at this weight (0: greedy, no "
         "model; the default was chosen on clips the suite never plays)", rich_help_panel=SPEECH)]
Vad = Annotated[str, typer.Option(help="silero or webrtc", rich_help_panel=SPEECH)]
VadStopMs = Annotated[float, typer.Option(
    help="VAD silence before speech counts as stopped, ms (pipecat's default 200; 120 can cut a soft last "
         "consonant)", rich_help_panel=SPEECH)]
VadStartMs = Annotated[float, typer.Option(help="VAD speech before it counts as started, ms",
                                           rich_help_panel=SPEECH)]
Turn = Annotated[str, typer.Option(help=TURN_HELP, rich_help_panel=SPEECH)]
Preemptive = Annotated[bool, typer.Option(
    help="with --turn decide: start the engine at the VAD stop on the words heard so far; the reply is held "
         "until the turn is confirmed and regenerated if the final words differ", rich_help_panel=SPEECH)]
Greeting = Annotated[str, typer.Option(help="what the bot says at call start ('' for nothing)",
                                       rich_help_panel=SPEECH)]
KeepLeadingMs = Annotated[float, typer.Option(help="Piper's leading silence kept per chunk, ms (-1: keep all)",
                                              rich_help_panel=SPEECH)]
BargeIn = Annotated[str, typer.Option(help=BARGE_IN_HELP, rich_help_panel=BARGE)]


def _run_defaults() -> dict[str, Any]:
    """The shared options' defaults, read from the default PipelineConfig (and its shaper) so they cannot drift:
    the inverse of `pipeline_config` (ms where the config keeps seconds; -1 where it keeps None: keep all)."""
    cfg = PipelineConfig()
    same = ("engine", "base_url", "api_key_env", "sampler", "step_ms", "policy", "speculative_tts", "tool_reason",
            "stt", "stt_early_final", "stt_beam", "stt_lm", "vad", "turn", "preemptive", "greeting", "barge_in")
    return {k: getattr(cfg, k) for k in same} | {
        "first_chunk_words": cfg.shaper.first_min_words, "min_words": cfg.shaper.min_words,
        "max_words": cfg.shaper.max_words, "max_hold_ms": cfg.shaper.max_hold_ms,
        "vad_stop_ms": round(cfg.vad_stop_secs * 1000.0, 6), "vad_start_ms": round(cfg.vad_start_secs * 1000.0, 6),
        "keep_leading_ms": -1.0 if cfg.keep_leading_ms is None else cfg.keep_leading_ms}


RUN_DEFAULTS: dict[str, Any] = _run_defaults()


def pipeline_config(*, engine: str, base_url: str | None, api_key_env: str | None, sampler: str | None,
                    step_ms: float | None, policy: str, first_chunk_words: int, min_words: int, max_words: int,
                    max_hold_ms: float, speculative_tts: float | None, tool_reason: str, stt: str,
                    stt_early_final: bool, stt_beam: int, stt_lm: float, vad: str, vad_stop_ms: float,
                    vad_start_ms: float, turn: str, preemptive: bool, greeting: str, keep_leading_ms: float,
                    barge_in: str, **extra: Any) -> PipelineConfig:
    """The PipelineConfig the shared options describe (milliseconds converted where the config keeps seconds)."""
    shaper = ShaperParams(min_words=min_words, max_words=max_words, max_hold_ms=max_hold_ms,
                          first_min_words=first_chunk_words)
    return PipelineConfig(engine=engine, base_url=base_url, api_key_env=api_key_env, sampler=sampler,
                          policy=policy, shaper=shaper, stt=stt, stt_beam=stt_beam, stt_lm=stt_lm,
                          stt_early_final=stt_early_final, vad=vad, barge_in=barge_in, turn=turn,
                          vad_stop_secs=vad_stop_ms / 1000.0, vad_start_secs=vad_start_ms / 1000.0,
                          greeting=greeting, preemptive=preemptive,
                          keep_leading_ms=None if keep_leading_ms < 0 else keep_leading_ms,
                          speculative_tts=speculative_tts, tool_reason=tool_reason, step_ms=step_ms, **extra)



def config_from(params: dict[str, Any], **extra: Any) -> PipelineConfig:
    """The PipelineConfig of a command's shared options, read from its parameters (`locals()` of the command)."""
    return pipeline_config(**{k: params[k] for k in RUN_DEFAULTS}, **extra)
