"""Which of the lab's detectors flag a call, and how well each one finds the fault it is meant for.

A call to an agent with a planted fault (`examples/fault_rules.py`) is read by every detector, each a figure or a
check the lab already reports for a line run (`voicelab call`):

| detector | flags a call when | meant for |
|---|---|---|
| `false_cut_in` | the agent began to speak inside an answered turn's speech (the line's false cut-in, read from the recording), or was audible over at least 200 ms of it | cuts-in |
| `late_stop` | on a barge-in the agent's reply was playing for, it went on more than 1000 ms after the caller began (or never stopped) | deaf |
| `false_barge_in` | the agent stopped on a backchannel or cough | jumpy |
| `far_vs_clean` | the call's FAR p50 is more than 500 ms over the clean agent's (the median of its calls' p50, leaving the call itself out) | slow |
| `expectations` | a check of the words failed | wrong-fact |
| `revision` | the agent dropped its audio (`clear`) while it was heard and the caller had been silent for 1 s: it cut itself off (the line's `clears_unprompted`) | revises |
| `unanswered` | a caller turn that should get a reply got none, in a call that did not fail | mute-turn |
| `failed_call` | the call failed on the line (the agent hung up mid-call, ...) | drops |
| `audio_gaps` | the agent's replies have a cut to silence of 150-400 ms that no `clear` of its own made (`voicelab.measure.audio_gaps`) | garbled |

Every flag on the clean agent's calls is a false alarm. Precision of a detector: of the calls it flags, the share
of its own fault; recall: of its fault's calls, the share it flags; both with Wilson 95 % intervals.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from voicelab.measure.intervals import proportion_stats

# the agents' fault names (examples/fault_rules.py: the examples are agents under test and import nothing of the lab)
FAULTS = ("none", "cuts-in", "deaf", "jumpy", "slow", "wrong-fact", "revises", "mute-turn", "drops", "garbled")
DETECTORS = {
    "false_cut_in": "the agent began to speak inside an answered turn's speech, or talked over 200 ms of it",
    "late_stop": "a barge-in the agent went on through for more than 1000 ms, or never stopped for",
    "false_barge_in": "the agent stopped on a backchannel or cough",
    "far_vs_clean": "FAR p50 of the call over 500 ms above the clean agent's",
    "expectations": "a check of the reply's words failed",
    "revision": "a clear while the agent was heard and the caller silent for 1 s (it cut itself off)",
    "unanswered": "a turn that should get a reply got none (the call did not fail)",
    "failed_call": "the call failed on the line",
    "audio_gaps": "a cut to silence of 150-400 ms inside the agent's replies that none of its own clears made",
}
EXPECTED = {"false_cut_in": "cuts-in", "late_stop": "deaf", "false_barge_in": "jumpy", "far_vs_clean": "slow",
            "expectations": "wrong-fact", "revision": "revises", "unanswered": "mute-turn", "failed_call": "drops",
            "audio_gaps": "garbled"}


@dataclass(frozen=True)
class Thresholds:
    talk_over_ms: float = 200.0
    late_stop_ms: float = 1000.0
    far_over_clean_ms: float = 500.0


@dataclass(frozen=True)
class TurnSeen:
    """One caller turn of a call, as the run folder has it."""

    turn: int
    expect: str | None
    far_ms: float | None
    talk_over_ms: float | None
    stop_latency_ms: float | None
    false_barge_in: bool
    checks_failed: int | None  # None: no checks on the turn
    bot_was_replying: bool  # the turn was started by the agent's reply (not by the no-reply timeout)
    cut_in: bool = False  # the agent began to speak inside the caller's speech (the turn's false_cut_in)


@dataclass(frozen=True)
class CallFacts:
    fault: str
    run: str
    call_id: str
    failed: bool
    turns: tuple[TurnSeen, ...]
    revisions: int  # clears while the agent was heard and the caller silent (the line's clears_unprompted)
    audio_gaps: int

    @property
    def far_p50(self) -> float | None:
        fars = [t.far_ms for t in self.turns if t.far_ms is not None and t.expect != "no_interrupt"]
        return float(statistics.median(fars)) if fars else None

    @staticmethod
    def from_run(fault: str, run: str, call_id: str, meta: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                 audio_gaps: int) -> CallFacts:
        """From a line run's calls/<id>.json and the call's turns.parquet rows; `audio_gaps` from its WAV."""
        reasons = {s["turn"]: s["reason"] for s in meta.get("schedule", [])}
        turns = tuple(TurnSeen(
            turn=int(r["turn"]), expect=r.get("expect"), far_ms=r.get("far_ms"), talk_over_ms=r.get("talk_over_ms"),
            stop_latency_ms=r.get("stop_latency_ms"), false_barge_in=bool(r.get("false_barge_in")),
            checks_failed=_failed_checks(r.get("expectations")), cut_in=bool(r.get("false_cut_in")),
            bot_was_replying=reasons.get(int(r["turn"])) == "rule") for r in sorted(rows, key=lambda r: r["turn"]))
        return CallFacts(fault, run, call_id, meta.get("status") == "failed", turns,
                         int(meta.get("line", {}).get("clears_unprompted") or 0), audio_gaps)


def _failed_checks(cell: Any) -> int | None:
    if cell is None:
        return None
    checks = json.loads(cell) if isinstance(cell, str) else cell
    return sum(1 for c in checks if not c.get("passed"))


@dataclass(frozen=True)
class Flagged:
    fault: str
    run: str
    call_id: str
    flags: dict[str, bool]
    figures: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _late_stop(t: TurnSeen, th: Thresholds) -> bool:
    if t.expect != "interrupt" or not t.bot_was_replying:
        return False
    if t.stop_latency_ms is None:  # the agent never stopped: it talked over the whole barge-in
        return (t.talk_over_ms or 0.0) > th.late_stop_ms
    return t.stop_latency_ms > th.late_stop_ms


def call_flags(c: CallFacts, clean_far_p50: float | None, th: Thresholds = Thresholds()) -> Flagged:
    """Every detector's verdict on one call; `clean_far_p50`: the clean agent's FAR p50 to compare with."""
    answered = [t for t in c.turns if t.expect is None]
    far = c.far_p50
    f = {
        "false_cut_in": any(t.cut_in or (t.talk_over_ms or 0.0) >= th.talk_over_ms for t in answered),
        "late_stop": any(_late_stop(t, th) for t in c.turns),
        "false_barge_in": any(t.false_barge_in for t in c.turns if t.expect == "no_interrupt"),
        "far_vs_clean": far is not None and clean_far_p50 is not None and far - clean_far_p50 > th.far_over_clean_ms,
        "expectations": any((t.checks_failed or 0) > 0 for t in c.turns),
        "revision": c.revisions > 0,
        "unanswered": not c.failed and any(t.far_ms is None for t in c.turns if t.expect != "no_interrupt"),
        "failed_call": c.failed,
        "audio_gaps": c.audio_gaps > 0,
    }
    figures = {"far_p50_ms": far, "clean_far_p50_ms": clean_far_p50, "revisions": c.revisions,
               "audio_gaps": c.audio_gaps,
               "talk_over_ms": {t.turn: t.talk_over_ms for t in c.turns},
               "stop_latency_ms": {t.turn: t.stop_latency_ms for t in c.turns if t.expect == "interrupt"}}
    return Flagged(c.fault, c.run, c.call_id, f, figures)


def flags(calls: Sequence[CallFacts], th: Thresholds = Thresholds()) -> list[Flagged]:
    """Every call's flags; the clean agent's FAR is the median of its calls' FAR p50, leaving the call itself
    out when it is one of them."""
    clean = [(c.run, c.call_id, c.far_p50) for c in calls if c.fault == "none" and c.far_p50 is not None]
    out = []
    for c in calls:
        pool = [far for run, cid, far in clean if (run, cid) != (c.run, c.call_id)]
        out.append(call_flags(c, float(statistics.median(pool)) if pool else None, th))
    return out


def confusion(flagged: Sequence[Flagged]) -> dict[str, Any]:
    """{"table": fault -> {"calls", detector -> calls flagged}, "detectors": detector -> its fault, tp, fp,
    fn, precision and recall (Wilson 95 %)}, in FAULTS and DETECTORS order."""
    table: dict[str, dict[str, int]] = {}
    for fault in FAULTS:
        mine = [f for f in flagged if f.fault == fault]
        if mine:
            table[fault] = {"calls": len(mine), **{d: sum(f.flags[d] for f in mine) for d in DETECTORS}}
    detectors = {}
    for d, fault in EXPECTED.items():
        tp = sum(1 for f in flagged if f.flags[d] and f.fault == fault)
        fp = sum(1 for f in flagged if f.flags[d] and f.fault != fault)
        n_fault = sum(1 for f in flagged if f.fault == fault)
        detectors[d] = {"fault": fault, "tp": tp, "fp": fp, "fn": n_fault - tp,
                        "precision": proportion_stats(tp, tp + fp), "recall": proportion_stats(tp, n_fault)}
    clean = [f for f in flagged if f.fault == "none"]
    return {"table": table, "detectors": detectors,
            "clean_flagged": {"calls": len(clean), "flagged": sum(1 for f in clean if any(f.flags.values()))}}


def _share(s: Mapping[str, Any]) -> str:
    if s["rate"] is None:
        return "—"
    lo, hi = s["rate_ci"]
    return f"{s['rate']:.2f} [{lo:.2f}, {hi:.2f}]"


def markdown(result: Mapping[str, Any]) -> str:
    """The result file's table: calls flagged per fault (rows) and detector (columns), the expected detector's
    cell in bold; then each detector's precision and recall (a detector whose fault was not called and that
    flagged no call has neither, and is left out of that list)."""
    dets = list(DETECTORS)
    lines = ["| fault (calls) | " + " | ".join(f"`{d}`" for d in dets) + " |", "|---" * (len(dets) + 1) + "|"]
    for fault, row in result["table"].items():
        cells = [f"**{row[d]}**" if EXPECTED[d] == fault else str(row[d]) for d in dets]
        lines.append(f"| {fault} ({row['calls']}) | " + " | ".join(cells) + " |")
    lines += ["", "| detector | meant for | flags its fault (recall) | its flags on its fault (precision) |",
              "|---|---|---|---|"]
    for d, s in result["detectors"].items():
        if s["tp"] + s["fn"] + s["fp"] == 0:
            continue
        lines.append(f"| `{d}` | {s['fault']} | {s['tp']} of {s['tp'] + s['fn']}: {_share(s['recall'])} | "
                     f"{s['tp']} of {s['tp'] + s['fp']}: {_share(s['precision'])} |")
    clean = result["clean_flagged"]
    lines += ["", f"Clean agent: {clean['flagged']} of {clean['calls']} calls flagged by any detector."]
    return "\n".join(lines) + "\n"
