"""The figures of docs/metrics.md and summary.json, as pure functions of event rows.

No pipecat, no torch. Inputs are `voicelab.measure.events.Event`s of one or more calls (the fixture's ground truth
is in them as caller_speech_* rows); the turn attribution contract is in `voicelab.measure.events`.

Per turn (`turn_table`), with t(kind) the call-clock time of the named event of that turn:
- far_ms = t(first bot_audible_onset of the reply) - t(caller_speech_end). The breakdown is a chain of
  consecutive intervals, so when every anchor exists the six parts sum to far_ms exactly:
    endpointing_ms         caller_speech_end -> first turn_end
    stt_ms                 turn_end -> llm_request (stt_final when no llm_request was logged)
    engine_first_commit_ms llm_request -> first gate_commit (the llm_request is the last one before it)
    gate_to_tts_ms         first gate_commit -> first tts_request (a pipeline hop, not in the summary)
    tts_first_audio_ms     first tts_request -> tts_first_audio of that chunk
    playout_ms             tts_first_audio -> bot_audible_onset (output buffering + leading silence)
  The summary's far_breakdown_ms gives the median of each of the five named parts over turns; medians of
  parts need not add up to the median FAR.
- stop_latency_ms (turns whose caller_speech_start says expect="interrupt"): the last bot_audible_end of an
  earlier reply at or after the interrupting speech onset (and before this turn's own reply is heard),
  minus that onset. None when the bot was not audible after the onset (nothing to stop).
- recovery_ms: far_ms of an expect="interrupt" turn.
- heard_word_errors: for a reply cut by a barge-in (context_update with interrupted=True), the word edit
  distance between the kept assistant content and the words played (playout_stop `played`, or the
  chunk's whole text if it was not interrupted). None if an interrupted chunk's played words are unknown.
- false_barge_in (expect="no_interrupt" turns): an interruption while the bot was speaking (payload
  bot_speaking, default true), attributed by time to the latest caller utterance started before it.
- churn / post_synthesis / audible: revisions of the response text classified by `RevisionTracker`.
- pauses, false_pause, resume_gap_ms (barge-in by pause, `voicelab.measure.pauses`): the bot's playout pauses
  attributed by time to this caller utterance; false_pause (expect="no_interrupt" turns) says the bot paused
  on it; resume_gap_ms is the longest paused silence before the bot resumed (None without a resume).
- spec_hits, spec_drops, tts_ms_saved (speculative synthesis, `voicelab.rules.speculative`): speculative_result rows
  of the reply: held audio that played as a committed chunk (hit, with the synthesis ms it saved) or was thrown
  away unheard (drop). None when the reply speculated nothing.
- first_token_ms / first_token_to_audio_ms / output_tokens_per_s: the engine's first visible token (the first
  engine_snapshot with non-empty text) after its llm_request (TTFT), that token to the first tts_first_audio of
  the reply (the part of FAR the gate controls; docs/metrics.md), and output tokens/s after it (`_engine_timing`).
Each definition is one step below, testable alone: `_attributed_reply` (which rows answer a turn), `_onset`,
`_anchors` and `_critical_path` (the FAR breakdown), `_stop_latency`, `_heard`, `_revisions`, `_preemptive`,
`_engine_figures`, `_speculative`; `_turn_facts` gathers them into a `TurnFacts`, from which the figure catalogue
(`voicelab.measure.figures`) takes each column, and from whose rows it makes each summary.json value.
Percentiles interpolate linearly between order statistics; a figure without samples is None, never 0.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engines.shop.answers import parse_expect, score_reply
from engines.snapshot import Snapshot
from engines.tool_span import strip_spans
from voicelab.measure import expectations, figures, intervals
from voicelab.measure.events import Event, EventKind, revised_char_offsets
from voicelab.measure.figure_summary import SummaryData
from voicelab.measure.pauses import TurnPauses, pauses_by_turn
from voicelab.measure.turn_facts import LoggedUtterance, RevisionCounts, TurnFacts
from voicelab.speech.wer import comparable_words, word_error_rate

K = EventKind


# ---- small numeric helpers -----------------------------------------------------------------------------

def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear between order statistics; None for no values."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))  # numpy's default is this linear rule


def _r(x: float | None, nd: int = 1) -> float | None:
    return None if x is None else round(x, nd)


def latency_stats(values: Sequence[float]) -> dict[str, Any]:
    """{"p50", "p95", "n", "p50_ci", "p95_ci"} in ms: figures None without values, the bootstrap 95 % intervals
    (`voicelab.measure.intervals`, seeded) None when n < 2."""
    return intervals.latency_stats(values)


def _ms(a_ns: int | None, b_ns: int | None) -> float | None:
    """b - a in milliseconds, None if either is missing."""
    if a_ns is None or b_ns is None:
        return None
    return (b_ns - a_ns) / 1e6


def spoken_words(text: str) -> list[str]:
    """Words for comparing heard text: tool spans dropped, lower case, punctuation trimmed off each word."""
    out = []
    for w in strip_spans(text).lower().split():
        w = w.strip(".,;:!?\"'()[]{}…—–-")
        if w:
            out.append(w)
    return out


def word_edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Levenshtein distance over words (substitutions, insertions and deletions each cost 1)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, start=1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, start=1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


# ---- revisions -----------------------------------------------------------------------------------------

class RevisionTracker:
    """Classifies each change of one reply's response text by how far that text had travelled.

    Feed every snapshot's text (and the char offsets of the positions it revised, in the previous text) in
    time order, interleaved with `mark_released` (gate), `mark_sent` (TTS request) and `mark_played`
    (playout start of a chunk: from then on its words can be heard) as char positions advance.
    A change at char c is audible if c < played, post_synthesis if c < max(sent, released) (text that has
    left the gate is as good as synthesised: fixing it means cancelling that TTS work), else churn.
    When a snapshot reports no revised positions, a change is detected from the text itself: if the
    previous text is not a prefix of the new one, one change at their first difference.
    """

    def __init__(self) -> None:
        self.counts = RevisionCounts()
        self.released = 0
        self.sent = 0
        self.played = 0
        self._prev_text: str | None = None
        self._prev_snap: Snapshot | None = None

    def mark_released(self, end_char: int) -> None:
        self.released = max(self.released, end_char)

    def mark_sent(self, end_char: int) -> None:
        self.sent = max(self.sent, end_char)

    def mark_played(self, end_char: int) -> None:
        self.played = max(self.played, end_char)

    def classify(self, char: int) -> str:
        if char < self.played:
            return "audible"
        if char < max(self.sent, self.released):
            return "post_synthesis"
        return "churn"

    def observe(self, text: str, revised_chars: Sequence[int] = ()) -> list[str]:
        """Record one snapshot; returns the class of each change it made."""
        prev, self._prev_text = self._prev_text, text
        changes = list(revised_chars)
        if not changes and prev is not None and not text.startswith(prev):
            d = 0
            while d < min(len(prev), len(text)) and prev[d] == text[d]:
                d += 1
            changes = [d]
        kinds = [self.classify(c) for c in changes]
        for k in kinds:
            setattr(self.counts, k, getattr(self.counts, k) + 1)
        return kinds

    def observe_snapshot(self, snap: Snapshot) -> list[str]:
        """`observe` straight from engine snapshots of one generation (fed in order)."""
        offsets = revised_char_offsets(snap, self._prev_snap)
        self._prev_snap = snap
        return self.observe(snap.text(), offsets)


# ---- per-turn table ------------------------------------------------------------------------------------

def _first(evs: Iterable[Event], kind: str, pred: Any = None) -> Event | None:
    for e in evs:
        if e.kind == kind and (pred is None or pred(e)):
            return e
    return None


def _t(e: Event | None) -> int | None:
    return None if e is None else e.t_ns


def _by_call(events: Iterable[Event]) -> dict[str, list[Event]]:
    calls: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        calls[e.call_id].append(e)
    for evs in calls.values():
        evs.sort(key=lambda e: e.t_ns)  # stable: rows logged at the same instant keep their order
    return dict(calls)


def _heard(reply: list[Event]) -> tuple[int | None, int, bool]:
    """(heard word errors or None, words played (known), reply was cut by a barge-in)."""
    chunk_text = {e.payload["chunk_id"]: str(e.payload.get("text", "")) for e in reply if e.kind == K.GATE_COMMIT}
    played: list[str] = []
    unknown = False
    started = set()
    stopped = set()
    for e in reply:
        if e.kind == K.PLAYOUT_START:
            started.add(e.payload["chunk_id"])
        elif e.kind == K.PLAYOUT_STOP:
            cid = e.payload["chunk_id"]
            stopped.add(cid)
            if e.payload.get("played") is not None:
                played += spoken_words(str(e.payload["played"]))
            elif e.payload.get("interrupted"):
                unknown = True
            else:
                played += spoken_words(str(e.payload.get("text", chunk_text.get(cid, ""))))
    if started - stopped:
        unknown = True  # a chunk began playing and we never learnt how much was heard
    cut = [e for e in reply if e.kind == K.CONTEXT_UPDATE and e.payload.get("interrupted")]
    if not cut:
        return None, len(played), False
    if unknown:
        return None, len(played), True
    kept = spoken_words(str(cut[-1].payload.get("content", "")))
    return word_edit_distance(played, kept), len(played), True


def _revisions(reply: list[Event]) -> RevisionCounts | None:
    """The reply's text revisions classified by `RevisionTracker`; None when no engine snapshot was logged."""
    if not any(e.kind == K.ENGINE_SNAPSHOT for e in reply):
        return None
    tr = RevisionTracker()
    chunk_end: dict[Any, int] = {}
    for e in reply:
        p = e.payload
        if e.kind == K.ENGINE_SNAPSHOT:
            tr.observe(str(p["text"]), [int(c) for c in p.get("revised_chars") or ()])
        elif e.kind == K.GATE_COMMIT:
            chunk_end[p["chunk_id"]] = int(p["end_char"])
            tr.mark_released(int(p["end_char"]))
        elif e.kind == K.TTS_REQUEST and p["chunk_id"] in chunk_end:
            tr.mark_sent(chunk_end[p["chunk_id"]])
        elif e.kind == K.PLAYOUT_START and p["chunk_id"] in chunk_end:
            tr.mark_played(chunk_end[p["chunk_id"]])
    return tr.counts


@dataclass(frozen=True, slots=True)
class _Anchors:
    """Call-clock times (ns) of one reply's steps as logged, before the critical path orders them."""

    turn_end: int | None  # the first turn_end
    llm_request: int | None  # the last llm_request at or before the first gate_commit
    stt_end: int | None  # llm_request, else the first stt_final
    commit: int | None  # the first gate_commit
    tts_request: int | None  # the first tts_request
    tts_first_audio: int | None  # tts_first_audio of that request's chunk, else the first one
    vad_stop: int | None = None  # the VAD's last stop at or before turn_end
    stt_final: int | None = None  # the recogniser's last final reading at or before turn_end


def _utterance(evs: list[Event], turn: int) -> LoggedUtterance:
    """The caller's utterance of `turn`: its first caller_speech_start (with expect, text, expect_reply) and
    its first caller_speech_end."""
    caller = [e for e in evs if e.turn == turn and e.kind in (K.CALLER_SPEECH_START, K.CALLER_SPEECH_END)]
    start_e = _first(caller, K.CALLER_SPEECH_START)
    end = _t(_first(caller, K.CALLER_SPEECH_END))
    if start_e is None:
        return LoggedUtterance(None, end)
    p = start_e.payload
    return LoggedUtterance(start_e.t_ns, end, p.get("expect"), p.get("text"), p.get("expect_reply"))


def _attributed_reply(evs: list[Event], turn: int) -> list[Event]:
    """Reply attribution: the rows of the reply that answers caller turn `turn`.

    Every row logged with that turn except the caller's own speech rows (the events contract attributes
    the whole reply path to the turn it answers). When preemptive generation withdrew a reply (a
    preempt_result with outcome miss), that reply never reached the caller: its llm_request, engine,
    gate_commit and tts rows logged before the last miss are dropped so the reply that did is timed.
    """
    reply = [e for e in evs if e.turn == turn and e.kind not in (K.CALLER_SPEECH_START, K.CALLER_SPEECH_END)]
    misses = [e.t_ns for e in reply if e.kind == K.PREEMPT_RESULT and e.payload.get("outcome") == "miss"]
    if misses:
        stale = (K.LLM_REQUEST, K.GATE_COMMIT, K.TTS_REQUEST, K.TTS_FIRST_AUDIO, K.ENGINE_SNAPSHOT, K.ENGINE_DONE)
        reply = [e for e in reply if not (e.kind in stale and e.t_ns < max(misses))]
    return _drop_unheard_attempts(reply, evs)


_ATTEMPT_KINDS = (K.TURN_END, K.TURN_DECISION, K.LLM_REQUEST, K.ENGINE_SNAPSHOT, K.ENGINE_DONE, K.GATE_COMMIT,
                  K.TOOL_CALL, K.TTS_REQUEST, K.TTS_FIRST_AUDIO, K.TTS_AUDIO_DONE, K.PLAYOUT_START, K.PLAYOUT_STOP,
                  K.PLAYOUT_PAUSE, K.PLAYOUT_RESUME, K.CONTEXT_UPDATE, K.SPECULATIVE_REQUEST, K.SPECULATIVE_RESULT)


def _drop_unheard_attempts(reply: list[Event], evs: list[Event]) -> list[Event]:
    """A reply the caller never heard is not the reply: when a turn ended more than once (the bot began an
    answer inside a pause, the caller's words stopped it before anything was audible, and the real answer
    followed the end of the turn), the attempts that made no audible sound are dropped, so the breakdown,
    the heard text and the revisions follow the reply that was heard. An attempt that was audible stays (an
    answer audible inside the caller's speech is a false cut-in)."""
    ends = sorted(e.t_ns for e in reply if e.kind == K.TURN_END)
    if len(ends) < 2:
        return reply
    bounds = [*ends, None]
    turn = reply[0].turn

    def audible(lo: int, hi: int | None) -> bool:
        return any(e.kind == K.BOT_AUDIBLE_ONSET and e.turn in (turn, -1) and e.t_ns >= lo
                   and (hi is None or e.t_ns < hi) for e in evs)

    unheard = [(lo, hi) for lo, hi in zip(bounds[:-2], bounds[1:-1], strict=True) if not audible(lo, hi)]
    return [e for e in reply if not (e.kind in _ATTEMPT_KINDS and any(lo <= e.t_ns < hi for lo, hi in unheard))]


def _after_cut_in(reply: list[Event], said: LoggedUtterance) -> list[Event]:
    """The reply heard after a false cut-in: the bot began an answer inside the caller's speech (a pause taken
    for the end), was heard there, the caller's words stopped it, and the answer came again after the caller
    finished. As the recording shows it (`voicelab.measure.truth`: the first sound that starts after the
    speech end), FAR, its breakdown, the answer and the heard text follow that later answer, from its turn
    end; the cut-in itself is the turn's `false_cut_in`. A cut-in that was still sounding at the speech end
    with nothing after it keeps the reply as it is."""
    assert said.end is not None
    later = [e.t_ns for e in reply if e.kind == K.BOT_AUDIBLE_ONSET and e.t_ns >= said.end]
    if not later:
        return reply
    ends = [e.t_ns for e in reply if e.kind == K.TURN_END and e.t_ns <= later[0]]
    start = max(ends) if len(ends) >= 2 else None
    return [e for e in reply
            if not (e.kind == K.BOT_AUDIBLE_ONSET and e.t_ns < said.end)
            and not (start is not None and e.kind in _ATTEMPT_KINDS and e.t_ns < start)]


def _preemptive(reply: list[Event]) -> tuple[str | None, float]:
    """(outcome, wasted engine ms) of preemptive generation for one reply.

    The outcome is "hit" when a reply started before the turn end was kept (any preempt_result hit), "miss"
    when all were dropped, None when nothing was generated early; wasted sums the rows' wasted_engine_ms.
    """
    outcomes = [e for e in reply if e.kind == K.PREEMPT_RESULT]
    preempt = None
    if outcomes:
        preempt = "hit" if any(e.payload.get("outcome") == "hit" for e in outcomes) else "miss"
    return preempt, sum(float(e.payload.get("wasted_engine_ms") or 0.0) for e in outcomes)


def _onset(reply: list[Event], evs: list[Event]) -> Event | None:
    """The reply's acoustic onset: the first bot sample heard (the reply's first bot_audible_onset).

    When the output side could not attribute it (turn -1), the first unattributed bot_audible_onset at or
    after the reply began to play (its first playout_start, else its first tts_first_audio) is taken.
    """
    onset_e = _first(reply, K.BOT_AUDIBLE_ONSET)
    if onset_e is None:
        heard_from = _t(_first(reply, K.PLAYOUT_START))
        if heard_from is None:
            heard_from = _t(_first(reply, K.TTS_FIRST_AUDIO))
        if heard_from is not None:
            onset_e = _first(evs, K.BOT_AUDIBLE_ONSET, lambda e: e.turn == -1 and e.t_ns >= heard_from)
    return onset_e


def _anchors(reply: list[Event]) -> _Anchors:
    """The logged times of the reply's steps that bound the critical-path parts (see `_Anchors`)."""
    commit = _t(_first(reply, K.GATE_COMMIT))
    requests = [e for e in reply if e.kind == K.LLM_REQUEST and (commit is None or e.t_ns <= commit)]
    llm_request = requests[-1].t_ns if requests else None
    tts_req_e = _first(reply, K.TTS_REQUEST)
    tts_first_e = None
    if tts_req_e is not None:
        cid = tts_req_e.payload["chunk_id"]
        tts_first_e = _first(reply, K.TTS_FIRST_AUDIO, lambda e: e.payload["chunk_id"] == cid)
    if tts_first_e is None:
        tts_first_e = _first(reply, K.TTS_FIRST_AUDIO)
    turn_end = _t(_first(reply, K.TURN_END))

    def last_before_end(kind: str) -> int | None:
        times = [e.t_ns for e in reply if e.kind == kind and (turn_end is None or e.t_ns <= turn_end)]
        return max(times) if times else None

    return _Anchors(turn_end=turn_end, vad_stop=last_before_end(K.VAD_STOP),
                    stt_final=last_before_end(K.STT_FINAL), llm_request=llm_request,
                    stt_end=llm_request if llm_request is not None else _t(_first(reply, K.STT_FINAL)),
                    commit=commit, tts_request=_t(tts_req_e), tts_first_audio=_t(tts_first_e))


FAR_PARTS = tuple(f.name for f in figures.parts_of("far_ms"))  # add up to far_ms
ENDPOINTING_PARTS = tuple(f.name for f in figures.parts_of("endpointing_ms"))  # add up to endpointing_ms


def _critical_path(speech_end: int | None, at: _Anchors, onset: int | None) -> dict[str, float | None]:
    """The FAR breakdown: endpointing, stt, engine_first_commit, gate_to_tts, tts_first_audio, playout (ms).

    Consecutive intervals speech end -> turn_end -> stt end -> commit -> tts_request -> tts_first_audio
    -> onset. Each anchor is first clamped to no earlier than the one before it and no later than the
    onset: a step that ran ahead of the previous one (a preemptive reply generated while the turn was
    being decided) costs nothing on the critical path, so when every anchor exists the parts add up to FAR.

    Endpointing itself is split where the time goes: `vad_stop_ms` (speech end -> the VAD's stop),
    `stt_final_wait_ms` (-> the recogniser's final reading, when it lands after the stop) and `rule_wait_ms`
    (-> the turn rule's verdict); the three add up to `endpointing_ms` (None where a run logged no VAD stop).
    """
    turn_end, stt_end, commit, tts_req, tts_first = _monotone(speech_end, at.turn_end, at.stt_end, at.commit,
                                                              at.tts_request, at.tts_first_audio, onset)
    vad_stop, final = _monotone(speech_end, at.vad_stop, at.stt_final, turn_end)[:2] if turn_end else (None, None)
    if at.vad_stop is None:
        vad_stop = final = None
    elif at.stt_final is None:
        final = vad_stop
    return {
        "endpointing_ms": _r(_ms(speech_end, turn_end)),
        "vad_stop_ms": _r(_ms(speech_end, vad_stop)),
        "stt_final_wait_ms": _r(_ms(vad_stop, final)),
        "rule_wait_ms": _r(_ms(final, turn_end)),
        "stt_ms": _r(_ms(turn_end, stt_end)),
        "engine_first_commit_ms": _r(_ms(stt_end, commit)),
        "gate_to_tts_ms": _r(_ms(commit, tts_req)),
        "tts_first_audio_ms": _r(_ms(tts_req, tts_first)),
        "playout_ms": _r(_ms(tts_first, onset)),
    }


def _false_cut_in(said: LoggedUtterance, onset: int | None) -> bool:
    """The bot's audio started inside the caller's speech of this turn: a reply to half a sentence."""
    return (onset is not None and said.start is not None and said.end is not None
            and said.start <= onset < said.end)


def _stop_latency(evs: list[Event], turn: int, said: LoggedUtterance, onset: int | None) -> float | None:
    """Barge-in stop latency (ms) of an expect="interrupt" utterance, else None.

    The last bot_audible_end of an earlier turn's reply at or after the caller's speech onset (and no later
    than this turn's own reply onset), minus that onset; None when the bot was not audible after it.
    """
    if said.expect != "interrupt" or said.start is None:
        return None
    ends = [e.t_ns for e in evs if e.kind == K.BOT_AUDIBLE_END and e.turn < turn
            and e.t_ns >= said.start and (onset is None or e.t_ns <= onset)]
    return _ms(said.start, max(ends)) if ends else None


def _stt_figures(evs: list[Event], turn: int, said: Any) -> dict[str, Any]:
    """stt_text (the turn's stt_final texts joined) and stt_wer against what the caller said; None each
    without an stt_final (stt_wer also None without a fixture text)."""
    finals = [e for e in evs if e.turn == turn and e.kind == K.STT_FINAL]
    if not finals:
        return {"stt_text": None, "stt_wer": None}
    heard_text = " ".join(str(e.payload.get("text", "")) for e in finals).strip()
    return {"stt_text": heard_text,
            "stt_wer": _r(word_error_rate(said, heard_text), 3) if isinstance(said, str) and said else None}


def _engine_figures(reply: list[Event], at: _Anchors) -> dict[str, Any]:
    """The engine's own figures, off the critical path: timed from its llm_request, plus engine_done's counts.

    first_token_to_audio_ms runs from the first visible token to the logged tts_first_audio (the part of
    FAR the gate controls); first_commit_ms to the logged first gate_commit.
    """
    first_tok, first_tok_ms, out_tps = _engine_timing(reply, at.llm_request)
    done_e = _first(reply, K.ENGINE_DONE)
    return {
        "first_snapshot_ms": _r(_ms(at.llm_request, _t(_first(reply, K.ENGINE_SNAPSHOT)))),
        "first_token_ms": _r(first_tok_ms),  # the engine's TTFT: its request to its first visible text
        "first_token_to_audio_ms": _r(_ms(first_tok, at.tts_first_audio)),
        "output_tokens_per_s": _r(out_tps, 2),
        "first_commit_ms": _r(_ms(at.llm_request, at.commit)),
        "engine_ms": _r(_ms(at.llm_request, _t(done_e))),
        "tokens": None if done_e is None else done_e.payload.get("tokens"),
        "steps": None if done_e is None else done_e.payload.get("steps"),
        "forwards": None if done_e is None else done_e.payload.get("forwards"),
        "cancelled": None if done_e is None else bool(done_e.payload.get("cancelled", False)),
    }


def _turn_facts(call_id: str, turn: int, evs: list[Event], barged: set[int],
                paused: Mapping[int, TurnPauses]) -> TurnFacts:
    """The facts of one caller turn (`barged`, `paused`: the call's false barge-ins and pauses by turn)."""
    said = _utterance(evs, turn)
    reply = _attributed_reply(evs, turn)
    cut_in = _false_cut_in(said, _t(_onset(reply, evs)))
    if cut_in:
        reply = _after_cut_in(reply, said)
    onset = _t(_onset(reply, evs))
    preempt, wasted = _preemptive(reply)
    heard_errors, played_words, cut = _heard(reply)
    at = _anchors(reply)
    answered = next((e for e in reversed(reply) if e.kind == K.ENGINE_DONE and not e.payload.get("cancelled")),
                    None)
    stt = _stt_figures(evs, turn, said.text)
    return TurnFacts(
        call_id=call_id, turn=turn, said=said, reply=reply, events=evs, far=_ms(said.end, onset), cut_in=cut_in,
        preemptive=preempt, preempt_wasted=wasted, heard_errors=heard_errors, played_words=played_words, cut=cut,
        revisions=_revisions(reply), answer=_answer(answered, said.expect_reply), stt=stt,
        slots_read=slots_read(stt["stt_text"], expectations.shop_expect(said.expect_reply)),
        path=_critical_path(said.end, at, onset),
        stop_latency=_stop_latency(evs, turn, said, onset), engine=_engine_figures(reply, at),
        speculative=_speculative(reply), barged=turn in barged, pauses=paused.get(turn))


def slots_read(reading: str | None, expect: Any) -> bool | None:
    """Whether the recogniser's reading holds every slot word the fixture's expected reply needs (a name, a
    day, a time, an order number), compared as `comparable_words` writes them ("3:30 PM" is "3 30 pm",
    "five one two" is "512"). None without a reading, an expectation or a slot word to read. It tells a wrong
    answer to a misheard request from a wrong answer to a request heard right."""
    if reading is None or expect is None:
        return None
    want = parse_expect(expect)
    if not want.slots:
        return None
    have = Counter(comparable_words(reading))
    need = Counter(w for v in want.slots.values() for w in comparable_words(str(v)))
    return all(have[w] >= n for w, n in need.items())


def _answer(done: Event | None, expect_reply: Any) -> dict[str, Any]:
    """The reply's answer scores (engines.shop.answers): coherent always, correct when the fixture says what is;
    and the fixture's checks of its words (`voicelab.measure.expectations`; no reply: nothing was said)."""
    text = None if done is None or done.payload.get("cancelled") else done.payload.get("text")
    checks = expectations.score(text if isinstance(text, str) else None, expect_reply)
    expect = expectations.shop_expect(expect_reply)
    if not isinstance(text, str) or not text.strip():
        return {"answer_text": None, "coherent": None, "answer_correct": None, "wrong_tool_call": None,
                "expectations": checks}
    score = score_reply(text, expect if expect is not None else "fallback")
    return {"answer_text": text, "coherent": score.coherent,
            "answer_correct": score.correct if expect is not None else None,
            "wrong_tool_call": score.wrong_tool_call if expect is not None else None, "expectations": checks}


def _engine_timing(reply: list[Event], llm_request: int | None) -> tuple[int | None, float | None, float | None]:
    """(t of the first visible token, TTFT ms, output tokens/s) of the generation that showed text first.

    The first visible token is the first engine_snapshot with non-empty text; TTFT runs from that
    generation's llm_request (matched by gen_id, else the reply's). Output speed is (N - 1) tokens over the
    first visible text to the generation's last snapshot (N: engine_done tokens; None if cancelled or the
    answer came in one snapshot), as engines.simulated.profile_engine.measure_timing counts it.
    """
    first = _first(reply, K.ENGINE_SNAPSHOT, lambda e: bool(e.payload.get("text")))
    if first is None:
        return None, None, None
    gen = first.payload.get("gen_id")
    same = [e for e in reply if e.payload.get("gen_id") == gen] if gen is not None else reply
    req = _first(same, K.LLM_REQUEST) if gen is not None else None
    ttft = _ms(req.t_ns if req is not None else llm_request, first.t_ns)
    snaps = [e for e in same if e.kind == K.ENGINE_SNAPSHOT]
    done = _first(same, K.ENGINE_DONE)
    tps = None
    if done is not None and not done.payload.get("cancelled") and snaps:
        n = int(done.payload.get("tokens") or 0)
        dt = (snaps[-1].t_ns - first.t_ns) / 1e9
        tps = (n - 1) / dt if n > 1 and dt > 0 else None
    return first.t_ns, ttft, tps


def _monotone(start: int | None, *points: int | None) -> list[int | None]:
    """Each point no earlier than the one before it (None stays None and does not constrain)."""
    out: list[int | None] = []
    prev = start
    for p in points[:-1]:  # the last point (the onset) only bounds, it is not returned
        if p is not None and prev is not None:
            p = max(p, prev)
        if p is not None and points[-1] is not None:
            p = min(p, points[-1])
        out.append(p)
        prev = p if p is not None else prev
    return out


def _speculative(reply: list[Event]) -> dict[str, Any]:
    """spec_hits, spec_drops, tts_ms_saved of one reply (None each when it speculated nothing)."""
    results = [e.payload for e in reply if e.kind == K.SPECULATIVE_RESULT]
    if not results and not any(e.kind == K.SPECULATIVE_REQUEST for e in reply):
        return {"spec_hits": None, "spec_drops": None, "tts_ms_saved": None}
    hits = [p for p in results if p["outcome"] == "hit"]
    return {"spec_hits": len(hits), "spec_drops": sum(1 for p in results if p["outcome"] == "drop"),
            "tts_ms_saved": _r(sum(float(p.get("tts_ms_saved") or 0.0) for p in hits))}


def _false_barge_ins(evs: list[Event]) -> set[int]:
    """Turns (expect=no_interrupt) during which the bot was interrupted while speaking."""
    starts = [(e.t_ns, e.turn, e.payload.get("expect")) for e in evs if e.kind == K.CALLER_SPEECH_START]
    hit: set[int] = set()
    for e in evs:
        if e.kind != K.INTERRUPTION or not e.payload.get("bot_speaking", True):
            continue
        before = [s for s in starts if s[0] <= e.t_ns]
        if before and before[-1][2] == "no_interrupt":
            hit.add(before[-1][1])
    return hit


def turn_table(events: Iterable[Event]) -> list[dict[str, Any]]:
    """One row per caller utterance (call_id, turn order), a column per computed figure of the catalogue
    (`voicelab.measure.figures`; docs/metrics.md says what each is)."""
    rows: list[dict[str, Any]] = []
    for call_id, evs in sorted(_by_call(events).items()):
        turns = sorted({e.turn for e in evs if e.kind in (K.CALLER_SPEECH_START, K.CALLER_SPEECH_END)})
        barged = _false_barge_ins(evs)
        paused = pauses_by_turn(evs)
        rows += [figures.turn_row(_turn_facts(call_id, turn, evs, barged, paused)) for turn in turns]
    return unscore_cut_replies(rows)


CUT_REPLY_SCORES = ("answer_correct", "coherent", "wrong_tool_call", "expectations")


def unscore_cut_replies(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leave unscored the reply the caller cut short: the turn before an interrupting turn (`expect:
    interrupt`) on which the bot was stopped (it has a stop latency). The caller never let it finish, so whether
    it would have been right cannot be heard, in process or on a line; its words stay in `answer_text`."""
    at = {(r["call_id"], r["turn"]): r for r in rows}
    for r in rows:
        if r.get("expect") != "interrupt" or r.get("stop_latency_ms") is None:
            continue
        before = at.get((r["call_id"], r["turn"] - 1))
        if before is not None:
            before.update({k: None for k in CUT_REPLY_SCORES if k in before})
    return rows


# ---- summary.json --------------------------------------------------------------------------------------

def summarize(events: Iterable[Event], config: Mapping[str, Any],
              truth: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """summary.json (docs/metrics.md) for one configuration: what ran, then each figure's summary as the
    catalogue declares it (`voicelab.measure.figures`).

    `config` gives run_id, engine, sampler and policy. `truth` holds the WAV analyzer's rows (call_id,
    turn, far_ms, stop_latency_ms); without it the truth figures are None.
    """
    evs = list(events)
    data = SummaryData(turn_table(evs), evs, None if truth is None else list(truth), percentile=percentile,
                               latency_stats=latency_stats)
    return {**{k: config.get(k) for k in ("run_id", "engine", "sampler", "policy")}, **figures.summary(data)}
