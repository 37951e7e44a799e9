"""The listening caller: a scenario fixture played as a conversation, each line chosen from the agent's last reply.

A fixture whose ``fixture.json`` holds a ``scenario`` (`voicelab.call.scenario`, docs/scenarios.md) has every line
it may say among its turns, synthesised before the call. During the call, `ListeningCaller` stands where the
fixed script's `CallerScheduler` stands in `voicelab.call.carrier`; it is one, with turns that grow:

- whenever the agent's audio stops, the stretch it just heard (from its onset to that stop) is read by the lab's
  recogniser in a worker thread; the reply's words are those of its stretches since the caller's last line, so
  at the end of a reply only its last stretch is left to read;
- once the reply is over (silent for the shortest start delay of the scenario's lines, the rule of
  ``bot_audio_end``), the scenario picks the next line from those words and it becomes the next turn, started by
  its own start rule from the fixture (``bot_audio_end`` and its delay), exactly as the fixed script starts it.
  If the words are not read yet, the line waits for them; how long is recorded (``late_ms``);
- a line the agent's words did not ask for (a repair, the opening, or going on after a repair) waits at least ``REPAIR_WAIT_S`` (1 s) after
  the agent stops, as people wait longer before "sorry?" than before an answer;
- if the agent talks again before the chosen line has started (a pause between its sentences outlasted the
  caller's patience), the choice is taken back and made again on the whole reply, as a person who has not
  spoken yet keeps listening (``reconsidered`` counts these);
- no reply within the no-reply timeout: the words are empty (the scenario's repair);
- the call ends once the scenario has ended (closing or giving-up line said) and the agent's reply to that
  last line is over.

The task outcome (done, not done, gave up), the words heard and the line chosen per turn go into the call's
calls/<id>.json (``scenario``) and the run's summary.json (``tasks``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import soxr

from voicelab.call.carrier import CallOptions, CallResult, call_limit_s
from voicelab.call.pacing import LINE_RATE
from voicelab.call.scenario import Scenario, State, parse_scenario
from voicelab.fixtures.format import CallerTurn, Fixture
from voicelab.fixtures.schedule import CallerScheduler, ScheduledClip, StartRule
from voicelab.measure.recording import CallRecorder
from voicelab.pcm import SAMPLE_RATE
from voicelab.speech.streaming import Recognizer
from voicelab.speech.text import recognizer_text

_PAD_S = 0.1  # audio kept around the reply for the recogniser
# A line the agent's words did not ask for (a repair, "sorry what was that", or the opening when the greeting asked
# for nothing known) waits at least this long after the agent stops: people leave a longer gap before initiating
# repair than before answering (Kendrick 2015, "The intersection of turn-taking and repair: the timing of
# other-initiations of repair in conversation", Frontiers in Psychology 6:250), and words that ask for nothing are
# often a reply not yet over. If the agent goes on within it, the choice is made again on the whole reply.
REPAIR_WAIT_S = 1.0
UNPROMPTED = ("repair", "opening", "go_on")


@dataclass
class Ear:
    """The lab's recogniser for the agent's replies during calls: one model, one call at a time on it."""

    recognizer: Recognizer
    lock: threading.Lock = field(default_factory=threading.Lock)

    def words(self, audio_8k: np.ndarray) -> str:
        x = audio_8k.astype(np.float32) / 32768.0
        x = soxr.resample(x, LINE_RATE, SAMPLE_RATE).astype(np.float32) if x.size else x
        if x.size < SAMPLE_RATE // 10:
            return ""
        with self.lock:
            return recognizer_text(str(self.recognizer.transcribe(x).raw))

    def warm_up(self) -> None:
        """One reading of a second of silence before the first call, so no call waits for the model to load."""
        with self.lock:
            self.recognizer.transcribe(np.zeros(SAMPLE_RATE, dtype=np.float32))


class ListeningCaller(CallerScheduler):
    """A `CallerScheduler` whose turns are the scenario's lines, appended one by one as the agent's words come."""

    def __init__(self, fixture: Fixture, scenario: Scenario, ear: Ear, recorder: CallRecorder,
                 no_reply_timeout_s: float = 6.0, greeting: bool = True) -> None:
        super().__init__(fixture.plans()[:1], no_reply_timeout_s=no_reply_timeout_s, greeting=greeting)
        self.turns = []  # the base class refuses an empty caller; this one's turns are chosen during the call
        self.scenario, self.ear, self.recorder = scenario, ear, recorder
        self.lines = {t.text: t for t in fixture.turns}
        self.played: list[CallerTurn] = []  # the turns as played: the carrier's fixture holds this list
        self.fixture = replace(fixture, turns=self.played)
        self.state = State()
        self.heard: list[dict[str, Any]] = []  # per chosen turn: the words, the line and why
        self.listen_s = min(t.start.delay_s for t in fixture.turns if t.text in scenario.lines)
        self._jobs: dict[tuple[float, float], asyncio.Future[str]] = {}
        # the state before the latest line was chosen, and the end of the audio it was chosen on (`_reconsider`)
        self._pending: tuple[State, float] | None = None
        self.reconsidered = 0  # choices taken back because the agent went on talking
        self._answers: dict[int, float] = {}  # turn -> the end of the reply its line was chosen on

    # --- the base class's questions, answered for a caller that is still choosing ---------------------------
    def due(self, now_s: float) -> list[ScheduledClip]:
        self._reconsider()
        if self.state.ended is None and len(self._fired) == len(self.turns):
            self._listen(now_s)
        return super().due(now_s)

    def _reconsider(self) -> None:
        """A line chosen but not started, and the agent talks again after what the choice was made on: the reply
        was not over (a pause between its sentences outlasted the caller's patience). A caller who has not
        spoken yet keeps listening, so the choice is taken back and made again on the whole reply."""
        if self._pending is None or len(self._fired) == len(self.turns):
            return
        state, heard_until = self._pending
        if not any(t > heard_until + 1e-9 for t in self._starts):
            return
        self._pending = None
        self.state = state
        self.turns.pop()
        self.played.pop()
        self.heard.pop()
        self._answers.pop(len(self.turns), None)
        self.reconsidered += 1

    def _anchor(self, k: int, after: str, now_s: float) -> tuple[float, Any, str] | None:
        """The fixed script's anchor, never before the end of the reply the line was chosen on: the caller
        answers what it heard, once it has heard it (the script's rule may take an earlier pause in the reply
        for its end when the line's delay is shorter than the time the caller listened)."""
        anchor = super()._anchor(k, after, now_s)
        until = self._answers.get(k)
        if anchor is not None and until is not None and anchor[1] == "rule" and anchor[0] < until:
            return until, "rule", anchor[2]
        return anchor

    def done(self, now_s: float) -> bool:
        return self.state.ended is not None and bool(self.turns) and super().done(now_s)

    @property
    def outcome(self) -> str:
        return self.state.outcome

    def report(self) -> dict[str, Any]:
        return {"goal": self.scenario.goal, "outcome": self.state.outcome, "lines": len(self.played),
                "reconsidered": self.reconsidered, "turns": self.heard}

    def _reply(self, prev_start: float, prev_speech_end: float) -> float | None:
        """The base rule, and one more pass-over: agent audio that began and stopped inside the caller's own
        line was talked over (a late answer to the line before, stopped by the agent as the caller spoke), not
        an answer to this line, so the caller waits for the one that follows. A phone line does not say why the
        agent stopped; a stretch wholly inside the caller's speech says it. Its words are still heard (`_listen`)."""
        t = prev_start
        while True:
            reply = super()._reply(t, prev_speech_end)
            if reply is None or reply >= prev_speech_end:
                return reply
            stop = self._first(self._stops, reply)
            if stop is None or stop > prev_speech_end + 1e-9:
                return reply
            t = stop + 1e-6

    # --- listening ------------------------------------------------------------------------------------------
    def _listen(self, now_s: float) -> None:
        k = len(self.turns)
        if k == 0:
            prev_start = prev_end = 0.0
            if not self.greeting:
                self._choose(k, "", now_s, None, now_s)
                return
        else:
            prev = self.played[k - 1]
            prev_start = self._clip_start(k - 1)
            prev_end = prev_start + prev.speech_offset_s
            if now_s < prev_start + prev.duration_s:
                return
        reply = self._reply(prev_start, prev_end)
        if reply is None:
            if now_s >= prev_end + self.no_reply_timeout_s:
                self._choose(k, "", now_s, None, prev_end + self.no_reply_timeout_s)
            return
        stops = [t for t in self._stops if t >= reply]
        if not stops or self._bot_speaking():
            return
        stop = max(stops)  # the agent is silent: what it has said ends at its latest stop
        # each stretch of the reply is read as soon as it stops, so only the last one is left to read at the end;
        # stretches talked over during the caller's line come first (what the caller heard of them counts)
        since = prev_start if k else reply
        stretches = [(a, b) for a in sorted(t for t in self._starts if t >= since)
                     if (b := self._first(self._stops, a)) is not None]
        jobs = [self._job(a, b) for a, b in stretches]
        lasted = self._lasting_stop(stop, self.listen_s)
        if lasted is None or now_s < lasted + self.listen_s - 1e-9 or not all(j.done() for j in jobs):
            return
        words = " ".join(w for w in (j.result() for j in jobs) if w)
        self._choose(k, words, now_s, (reply, stretches[-1][1]), lasted)

    def _job(self, start_s: float, end_s: float) -> asyncio.Future[str]:
        key = (start_s, end_s)
        if key not in self._jobs:
            a = max(0, int((start_s - _PAD_S) * LINE_RATE))
            b = int((end_s + _PAD_S) * LINE_RATE)
            audio = np.array(self.recorder.right[a:b], copy=True)  # copied here: the clock goes on writing
            self._jobs[key] = asyncio.get_running_loop().run_in_executor(None, self.ear.words, audio)
        return self._jobs[key]

    def _choose(self, k: int, words: str, now_s: float, reply: tuple[float, float] | None, over_s: float) -> None:
        before = self.state
        choice, self.state = self.scenario.next_line(words, self.state)
        entry: dict[str, Any] = {"turn": k, "heard": words, "line": choice.line, "why": choice.why,
                                 "reply_s": None if reply is None else [round(reply[0], 3), round(reply[1], 3)]}
        if choice.line is None:
            self.heard.append(entry)
            return
        line = self.lines[choice.line]
        delay_s = max(line.start.delay_s, REPAIR_WAIT_S) if choice.why in UNPROMPTED else line.start.delay_s
        turn = replace(line, index=k, start=StartRule("bot_audio_end", delay_s))
        entry["late_ms"] = round(max(0.0, now_s - (over_s + (delay_s if reply else 0.0))) * 1000)
        self.heard.append(entry)
        self.played.append(turn)
        self.turns.append(turn.plan())
        self._pending = (before, over_s if reply is None else reply[1])
        if reply is not None:
            self._answers[k] = over_s


def load_scenarios(fixtures: Sequence[Fixture]) -> dict[str, Scenario]:
    """The scenario of every fixture that has one, by fixture path; a bad one raises `ScenarioError` (one line)."""
    return {str(f.path): parse_scenario(f.scenario, [t.text for t in f.turns], str(f.path))
            for f in fixtures if f.scenario is not None}


def as_script(fixture: Fixture) -> Fixture:
    """The fixed-script form of a scenario fixture: the turns its scenario's ``script`` names, in that order
    (the fixture itself when it has no scenario or no script)."""
    if fixture.scenario is None:
        return fixture
    script = parse_scenario(fixture.scenario, [t.text for t in fixture.turns], str(fixture.path)).script
    if not script:
        return fixture
    by_text = {t.text: t for t in fixture.turns}
    return replace(fixture, turns=[replace(by_text[text], index=i) for i, text in enumerate(script)])


def listening_options(opts: CallOptions, fixtures: Sequence[Fixture], scenarios: dict[str, Scenario],
                      make_recognizer: Callable[[], Recognizer]) -> CallOptions:
    """`opts` with a listening caller for the fixtures that have a scenario (no change when none has), and a
    call time limit that leaves room for every line a scenario may say."""
    if not scenarios:
        return opts
    ear = Ear(make_recognizer())
    ear.warm_up()

    def caller(fixture: Fixture, recorder: CallRecorder, o: CallOptions) -> tuple[Fixture, CallerScheduler]:
        sc = scenarios.get(str(fixture.path))
        if sc is None:
            return fixture, fixture.scheduler(no_reply_timeout_s=o.no_reply_timeout_s, greeting=o.greeting)
        c = ListeningCaller(fixture, sc, ear, recorder, no_reply_timeout_s=o.no_reply_timeout_s, greeting=o.greeting)
        return c.fixture, c

    limit = opts.max_call_s
    if limit is None:
        longest = max((max(t.duration_s for t in f.turns) for f in fixtures), default=0.0)
        lines = max(sc.max_lines + 1 for sc in scenarios.values())
        limit = max([call_limit_s(f, opts) for f in fixtures] + [
            lines * (longest + opts.no_reply_timeout_s + 4.0) + 30.0])
    return replace(opts, caller=caller, max_call_s=limit)


def task_outcome(result: CallResult) -> dict[str, Any] | None:
    """The call's scenario report (None for a fixed script)."""
    return result.scheduler.report() if isinstance(result.scheduler, ListeningCaller) else None


def task_summary(results: Sequence[CallResult]) -> dict[str, Any] | None:
    """summary.json's ``tasks``: outcomes of the calls that had a scenario (None when none had)."""
    reports = {r.call_id: task_outcome(r) for r in results}
    out = {cid: rep["outcome"] for cid, rep in reports.items() if rep is not None}
    if not out:
        return None
    return {"calls": len(out), **{k: sum(1 for v in out.values() if v == k) for k in ("done", "not_done", "gave_up")},
            "by_call": out}
