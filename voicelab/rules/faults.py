"""Fault injection for users: `voicelab run --inject FAULT@WHERE` rehearses a pipeline's failure paths.

    FAULT  engine-raise | engine-stall | tts-raise | tts-stall | stt-raise | stt-stall | caller-disconnect
    WHERE  turn:N (the reply to caller utterance N; for caller-disconnect: when clip N starts)
           t:S    (the first use of the component at or after S seconds on the call clock)

A *raise* makes the component fail as a crash would (the engine's stream raises, Piper raises on a sentence,
the recogniser's final transcript is lost with an error); a *stall* makes it wait for ever (the watchdogs of
`voicelab.pipeline.processors.watchdog` must end it); *caller-disconnect* hangs up the call. Each fault fires at most
once per call and logs a `fault` row; `outcomes` tells from the event rows what followed it.

Plain Python: parsing, the per-call plan and the outcome table. The wrappers are in
`voicelab.pipeline.processors.faults_wrappers` (the engine, the recogniser, the hang-up) and, for the TTS,
`voicelab.pipeline.services.faulty_tts` (`FaultyPiperTTS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from voicelab.measure.events import Event, EventKind

K = EventKind

COMPONENTS = ("engine", "tts", "stt")
ACTIONS = ("raise", "stall")
KINDS = tuple(f"{c}-{a}" for c in COMPONENTS for a in ACTIONS) + ("caller-disconnect",)
HELP = f"FAULT@WHERE, FAULT one of {', '.join(KINDS)}; WHERE turn:N or t:SECONDS"


class FaultSpecError(ValueError):
    """A malformed --inject value; the message names it."""


class InjectedFault(RuntimeError):
    """The failure a *raise* fault makes a component throw."""


@dataclass(frozen=True)
class Fault:
    kind: str  # one of KINDS
    turn: int | None = None
    at_s: float | None = None

    @property
    def component(self) -> str:
        return self.kind.split("-")[0]

    @property
    def action(self) -> str:
        return self.kind.split("-", 1)[1]

    @property
    def where(self) -> str:
        return f"turn:{self.turn}" if self.turn is not None else f"t:{self.at_s:g}"

    @property
    def spec(self) -> str:
        return f"{self.kind}@{self.where}"

    @classmethod
    def parse(cls, text: str) -> Fault:
        kind, sep, where = text.strip().partition("@")
        if kind not in KINDS or not sep:
            raise FaultSpecError(f"--inject '{text}': expected {HELP}")
        unit, _, value = where.partition(":")
        try:
            if unit == "turn" and value.isdigit():
                return cls(kind, turn=int(value))
            if unit == "t" and 0.0 <= float(value) < float("inf"):
                return cls(kind, at_s=float(value))
        except ValueError:
            pass
        raise FaultSpecError(f"--inject '{text}': WHERE must be turn:N (N >= 0) or t:SECONDS (>= 0)")


def parse_faults(specs: Iterable[str]) -> tuple[Fault, ...]:
    return tuple(Fault.parse(s) for s in specs)


class FaultPlan:
    """The faults of one call and which of them have fired; `take` fires one (logging its `fault` row)."""

    def __init__(self, faults: Sequence[Fault], log: Any) -> None:  # log: voicelab.measure.calllog.CallLog
        self.faults = list(faults)
        self._log = log
        self._fired: set[Fault] = set()

    def take(self, component: str, turn: int) -> Fault | None:
        """The fault of `component` due now at reply turn `turn` (it fires once), or None."""
        now_s = self._log.now_ns() / 1e9
        for f in self.faults:
            if f in self._fired or f.component != component:
                continue
            if (f.turn is not None and f.turn == turn) or (f.at_s is not None and now_s >= f.at_s):
                self._fired.add(f)
                self._log.log(K.FAULT, turn, {"fault": f.kind, "where": f.where})
                return f
        return None

    def disconnect_due(self) -> Fault | None:
        """The caller-disconnect fault whose moment has come (clip N started, or t:S reached), or None."""
        now_s = self._log.now_ns() / 1e9
        for f in self.faults:
            if f.kind != "caller-disconnect" or f in self._fired:
                continue
            if (f.turn is not None and self._log.utterance(f.turn) is not None) or (
                    f.at_s is not None and now_s >= f.at_s):
                self._fired.add(f)
                self._log.log(K.FAULT, f.turn if f.turn is not None else -1, {"fault": f.kind, "where": f.where})
                return f
        return None


# what a fault led to, in the order a reader wants to know it
_AFTERMATH = (K.WATCHDOG, K.CALL_LIMIT, K.ERROR)


def outcomes(events: Sequence[Event]) -> list[dict[str, Any]]:
    """One row per fired fault: when, what ended it (the next watchdog / error / call_limit row of its call),
    and whether the bot was heard again afterwards in that call (the call went on)."""
    rows = []
    for i, e in enumerate(events):
        if e.kind != K.FAULT:
            continue
        later = [x for x in events[i + 1:] if x.call_id == e.call_id]
        ends = [x for x in later if x.kind in _AFTERMATH]
        first = ends[0] if ends else None
        if first is None:
            handled = "call ended (hung up)" if e.payload["fault"] == "caller-disconnect" else "nothing logged"
        elif first.kind == K.WATCHDOG:
            handled = f"watchdog {first.payload['what']} ({first.payload['limit_s']:g} s)"
        elif first.kind == K.CALL_LIMIT:
            handled = f"call limit ({first.payload['limit_s']:g} s)"
        else:
            handled = f"error in {first.payload['where']}: {first.payload['message']}"
        went_on = any(x.kind == K.BOT_AUDIBLE_ONSET and x.t_ns > (first or e).t_ns for x in later)
        rows.append({"call_id": e.call_id, "fault": e.payload["fault"], "where": e.payload["where"],
                     "turn": e.turn, "t_s": round(e.t_ns / 1e9, 3), "handled_by": handled,
                     "bot_heard_after": went_on})
    return rows
