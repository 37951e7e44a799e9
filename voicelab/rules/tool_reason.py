"""Tool calls need a reason: may the pipeline execute this tool call?

A destructive tool call (`engines.shop.corpus.DESTRUCTIVE_TOOLS`: cancel, reschedule) is executed only with a
reason, chosen by `PipelineConfig.tool_reason` (`voicelab run --tool-reason`):

- `words` (default): the caller's words of that turn ask for it (`engines.shop.answers.tool_call_supported`: a cue
  word such as "cancel" or "move" in the last utterance, and every argument value the tool needs said in it or
  in the caller's earlier turns);
- `confidence[:BAR]`: the engine's own confidence on the tool span is at least BAR (default `CONFIDENCE_BAR`);
- `confirm`: as `words`, but a call the words only partly ask for (the tool's cue word said but not every value,
  or every value said but no cue word) is neither executed nor refused: it is `asked` (the bot says a
  confirmation question, `voicelab.rules.confirm`, and the caller's yes runs it); one with neither is refused;
- `off`: every tool call is executed (the lab's behaviour before the rule).

Other tool calls (book, order_status) change nothing that cannot be undone and are always executed. A refused
call is not executed and not put back into the engine's history as done.

The confidence is the one the engine had when it *committed* each token of the span (`CommitConfidence`), not
the final snapshot's: the diffusion samplers report a probability only for the block being decoded (finished
blocks read 0.0, so a span in the first block of a long reply would always look unsure), and the threshold
sampler's per-step probability of a committed token keeps moving after the commit. The commit-time value is
what the sampler acted on: the threshold sampler commits tokens at >= its threshold (0.9) and forces the single
best one per step when none passes, so a span committed on a forced guess shows a value below 0.9.

Plain Python, no pipecat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engines.shop.answers import tool_call_supported, tool_span_confidence
from engines.shop.corpus import DESTRUCTIVE_TOOLS
from engines.snapshot import Snapshot

TOOL_REASONS = ("words", "confidence", "confirm", "off")
# `confidence` mode: the least commit-time confidence over the tool span must reach this. Measured on the
# shipped tiny diffusion engine (threshold sampler) with 11 cancel/reschedule requests of the corpus's kind and
# 7 garbled or unrelated sentences that still drew a cancel ("oh god you can only when it closed today", "will
# we ever forget it", "please cancel it", "my name is ben", ...): the requests commit their spans at 0.936 to
# 0.983, the unsupported calls at 0.718 to 0.908 (a token just over the sampler's own 0.9 bar, or a forced
# guess below it). 0.93 sits between the two. The AR engine is less sure of everything (requests 0.68 to 0.86,
# unsupported calls 0.21 to 0.52): at 0.93 it refuses every destructive call; `confidence:0.6` separates its
# figures. A thin margin from few prompts, which is why `words` is the default.
CONFIDENCE_BAR = 0.93


class ToolReasonError(ValueError):
    """An unknown tool-reason mode."""


TOOL_REASON_HELP = ("words (the caller's words must ask for a cancel or reschedule), confidence[:BAR] (the engine's "
                    f"commit-time confidence on the tool span >= BAR, default {CONFIDENCE_BAR}), confirm (as words, "
                    "but ask the caller 'cancel your monday appointment, right?' when the words only partly ask "
                    "for it; a yes runs it) or off (execute all)")


def parse_mode(spec: str) -> tuple[str, float]:
    """(mode, confidence bar) from "words", "confidence", "confidence:0.6", "confirm" or "off"."""
    mode, sep, bar = spec.partition(":")
    try:
        value = float(bar) if sep else CONFIDENCE_BAR
    except ValueError:
        value = -1.0
    if mode not in TOOL_REASONS or (sep and mode != "confidence") or not 0.0 < value <= 1.0:
        raise ToolReasonError(f"tool_reason: '{spec}' is not {TOOL_REASON_HELP}")
    return mode, value


class CommitConfidence:
    """Per response position, the engine's confidence in the snapshot where its current token appeared."""

    def __init__(self) -> None:
        self._tokens: list[int | None] = []
        self._conf: list[float] = []

    def observe(self, snap: Snapshot) -> None:
        n = len(snap.tokens)
        if len(self._tokens) < n:
            self._tokens += [None] * (n - len(self._tokens))
            self._conf += [0.0] * (n - len(self._conf))
        for i in range(n):
            tok = None if snap.masked[i] else snap.tokens[i]
            if tok != self._tokens[i]:  # newly committed, or revised: the value it was (re)committed with
                self._tokens[i] = tok
                self._conf[i] = snap.confidence[i] if tok is not None else 0.0

    def tool_span(self, snap: Snapshot) -> float | None:
        """The least commit-time confidence over the reply's leading tool span (None: no tool span)."""
        self.observe(snap)
        n = len(snap.tokens)
        return tool_span_confidence(replace(snap, confidence=tuple(self._conf[:n])))


@dataclass(frozen=True)
class Verdict:
    execute: bool
    reason: str
    ask: bool = False  # neither executed nor refused yet: the caller is asked (mode `confirm`)

    @property
    def outcome(self) -> str:
        return "asked" if self.ask else "executed" if self.execute else "refused"


def _partly_asked(name: str, args: Mapping[str, str], user_text: str, earlier: Sequence[str]) -> str | None:
    """Why the caller's words half ask for this call (None: not at all), from `tool_call_supported` alone."""
    # the cue-word half: every value counted as said; the values half: the tool's own name (one of its cue
    # words) counted as said
    if tool_call_supported(user_text, name, args, [*earlier, *args.values()]):
        return f"the caller asked for {name} but did not say every value"
    if tool_call_supported(f"{user_text} {name}", name, args, earlier):
        return f"the caller said every value but did not ask for {name}"
    return None


def judge(mode: str, name: str, args: Mapping[str, str], user_text: str, earlier: Sequence[str] = (),
          confidence: float | None = None, bar: float = CONFIDENCE_BAR) -> Verdict:
    """Execute or refuse one tool call; `user_text` is the caller's last utterance, `earlier` their turns before."""
    if mode not in TOOL_REASONS:
        raise ToolReasonError(f"tool_reason: '{mode}' is not one of {', '.join(TOOL_REASONS)}")
    if name not in DESTRUCTIVE_TOOLS:
        return Verdict(True, "not destructive")
    if mode == "off":
        return Verdict(True, "tool reason off")
    if mode in ("words", "confirm"):
        if tool_call_supported(user_text, name, args, earlier):
            return Verdict(True, "the caller's words ask for it")
        said = " ".join(user_text.split()) or "(nothing)"
        partly = _partly_asked(name, args, user_text, earlier) if mode == "confirm" else None
        if partly is not None:
            return Verdict(False, f"{partly}: {said!r}", ask=True)
        return Verdict(False, f"the caller's words do not ask for {name} with these values: {said!r}")
    if confidence is None:
        return Verdict(False, "no engine confidence on the tool span")
    if confidence >= bar:
        return Verdict(True, f"engine confidence {confidence:.3f} >= {bar}")
    return Verdict(False, f"engine confidence {confidence:.3f} < {bar}")
