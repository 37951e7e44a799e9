"""The words ceiling: the best curve any turn-end rule that cannot hear hesitation can reach on the generated corpus.

Each generated turn is a sentence said with one pause inside it, and `P_COMPLETE` (40 %) of those pauses follow
words that are themselves a complete sentence ("my internet keeps dropping. / because i work from home"). The
renderer reads every complete prefix with a full stop, so at such a pause the caller has said a whole sentence
in a final-sounding tone, exactly as at the turn's true end. Whatever a rule makes of the words and the tone,
it sees the same thing at both until the caller speaks again.

The ceiling is a rule with perfect knowledge of the words: it never ends a turn inside an incomplete sentence,
and ends it `wait` ms after the true end of speech wherever the words so far are complete (every true end and
every complete-prefix pause); `wait` is its knob. At a complete-prefix pause it cuts the caller off when the
pause is longer than `wait`, and at every true end its dead air is exactly `wait`. So its dead air at X % false
cut-offs is the wait that only X % of all pauses (all of them complete-prefix pauses) outlast. No rule reading
words and a final contour does better; a rule does better only by hearing that a caller is not done when the
words are (continuation prosody, breath, a held vowel), which espeak-ng's voices do not produce
(docs/decisions/turn-end-operating-point.md). Pure numpy over the bench's traces (the pause lengths are those
of the rendered audio, from the clean signal).

    python -m voicelab.turnbench.ceiling    # renders the generated turns (about a minute) and prints the figures
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from voicelab.turnbench import curve as cv
from voicelab.turnbench.replay import Trace

WAITS_MS = tuple(float(w) for w in range(0, 3001, 10))  # the knob: 10 ms steps, finer than any figure read off it


def words_ceiling(traces: Sequence[Trace], waits_ms: Sequence[float] = WAITS_MS) -> cv.Curve | None:
    """The ceiling's curve over `waits_ms` on the traces that carry the cut's kind (generated turns), or None."""
    pauses: list[tuple[bool, float]] = []  # (the words before it are a sentence, its length in ms)
    ends = 0
    for t in traces:
        kind = t.meta.get("kind")
        if kind is None:
            continue
        for p in t.points:
            if p.kind == "end":
                ends += 1
            elif p.resume_s is not None:
                pauses.append((kind == "complete", (p.resume_s - p.t_s) * 1000.0))
    if not pauses or not ends:
        return None
    w = np.asarray(waits_ms, dtype=float)[:, None]
    complete = np.array([c for c, _ in pauses])[None, :]
    length = np.array([x for _, x in pauses])[None, :]
    cut = complete & (length > w)  # the caller is still silent when the wait runs out
    dead = np.repeat(w, ends, axis=1)
    return cv.curve(list(waits_ms), cut, dead)


def ceiling_report(traces: Sequence[Trace]) -> dict[str, object] | None:
    """The ceiling's summary figures (`curve.figures`: dead air at 1/2/5/10 % false cut-offs, false cut-offs at
    300/500/800 ms), with the share of complete-prefix pauses it rests on."""
    c = words_ceiling(traces)
    if c is None:
        return None
    n_complete = sum(t.meta.get("kind") == "complete" for t in traces if t.meta.get("kind") is not None)
    points = [{"value": v, "false_cutoff_rate": round(float(r), 4), "dead_air_p50_ms": float(a)}
              for v, r, a in zip(c.values, c.rate, c.p50, strict=True)]
    return {"strategy": "words ceiling", "knob": "wait_ms", "pauses": c.n_pauses, "ends": c.n_ends,
            "complete_prefix_pauses": n_complete, **cv.figures(c), "curve": points}


def main() -> None:  # pragma: no cover - a command-line reading of the ceiling without the bench's score cache
    from voicelab.turnbench.audio import render_turn
    from voicelab.turnbench.cases import load_corpus

    turns, _ = load_corpus()
    traces = []
    for c in turns:
        a = render_turn(c)
        traces.append(Trace(c.id, "generated", 0.0, np.zeros(0, bool), list(a.points), [], [], dict(a.meta)))
    report = ceiling_report(traces)
    if report is not None:
        report.pop("curve")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
