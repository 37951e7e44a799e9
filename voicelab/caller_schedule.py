"""When each caller clip of a fixture starts playing, given the bot's audio as it happens.

Pure logic: the fixture player reports the bot's audio start/stop events and polls
:meth:`CallerScheduler.due`; the scheduler answers with the clips whose start has come, each
exactly once. All times are seconds on the call clock (zero at call start).

Start rules (DESIGN.md §6), for turn k whose previous caller clip started at ``s[k-1]``:

- ``call_start``: at ``delay_s`` on the call clock.
- ``prev_turn_end``: ``delay_s`` after the previous caller clip ends (``s[k-1]`` + its duration).
- ``bot_audio_start``: ``delay_s`` after the start of *the bot's reply to the previous turn*,
  defined as the first ``bot_audio_started`` event at or after ``s[k-1]``. For turn 0 the
  previous "turn" is the call start, so the reply is the bot's greeting.
- ``bot_audio_end``: ``delay_s`` after the end of that reply: the first ``bot_audio_stopped``
  at or after the reply's start. A backchannel (previous turn ``expect: no_interrupt``) gets
  no reply of its own; the bot keeps talking over it, so here the end is the first
  ``bot_audio_stopped`` at or after ``s[k-1]`` (the end of the speech the backchannel
  overlapped). A ``bot_audio_start`` rule after a backchannel names a reply that cannot
  exist; the fixture validator refuses it.

Fallbacks, each reported with ``reason="timeout"`` and a note:

- no reply: if the bot has not started its reply ``no_reply_timeout_s`` after the previous
  turn's speech end (for turn 0: after call start), that moment replaces the missing event and
  ``delay_s`` is still added;
- endless reply: if the reply has started but not stopped ``max_reply_s`` after its start
  (after ``s[k-1]`` for a backchannel), that moment replaces the missing stop.

A caller has one mouth: a clip never starts before the previous clip has ended; a rule that
asks for earlier is held to that end and says so in its note.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

After = Literal["call_start", "prev_turn_end", "bot_audio_start", "bot_audio_end"]
Expect = Literal["interrupt", "no_interrupt"]
AFTER_KINDS: tuple[str, ...] = ("call_start", "prev_turn_end", "bot_audio_start", "bot_audio_end")
EXPECT_KINDS: tuple[str, ...] = ("interrupt", "no_interrupt")
_EPS_S = 1e-9  # sums of seconds are not exact: 0.53 + 2.0 > 2.53


@dataclass(frozen=True)
class StartRule:
    after: After
    delay_s: float = 0.0


@dataclass(frozen=True)
class TurnPlan:
    """What the scheduler needs of one caller turn; speech times are inside the clip."""

    start: StartRule
    duration_s: float
    speech_onset_s: float
    speech_offset_s: float
    expect: Expect | None = None


@dataclass(frozen=True)
class ScheduledClip:
    turn: int
    start_s: float
    reason: Literal["rule", "timeout"]
    note: str


@dataclass(frozen=True)
class UtteranceTruth:
    """Ground truth of one caller utterance on the call clock."""

    turn: int
    clip_start_s: float
    clip_end_s: float
    speech_start_s: float
    speech_end_s: float
    expect: Expect | None
    reason: Literal["rule", "timeout"]


class CallerScheduler:
    def __init__(
        self,
        turns: Sequence[TurnPlan],
        no_reply_timeout_s: float = 6.0,
        max_reply_s: float = 60.0,
        tail_s: float = 1.5,
    ) -> None:
        if not turns:
            raise ValueError("a caller needs at least one turn")
        self.turns = list(turns)
        self.no_reply_timeout_s = no_reply_timeout_s
        self.max_reply_s = max_reply_s
        self.tail_s = tail_s
        self._starts: list[float] = []  # bot_audio_started times, in arrival order
        self._stops: list[float] = []
        self._fired: list[ScheduledClip] = []
        self._actual: dict[int, float] = {}
        # Once a turn's anchor is known it is frozen: a bot reply arriving after a timeout fired
        # does not move a clip the caller has already decided to play.
        self._anchors: dict[int, tuple[float, Literal["rule", "timeout"], str]] = {}

    # --- events from the output side -------------------------------------------------------
    def bot_audio_started(self, t_s: float) -> None:
        self._starts.append(t_s)

    def bot_audio_stopped(self, t_s: float) -> None:
        self._stops.append(t_s)

    def clip_started(self, turn: int, t_s: float) -> None:
        """Optional: the player's real start time of a clip, if it differs from the schedule.

        Call it right after :meth:`due` returned the clip: later turns are timed from it.
        """
        if turn >= len(self._fired):
            raise ValueError(f"turn {turn} has not been scheduled yet")
        self._actual[turn] = t_s

    # --- queries -----------------------------------------------------------------------------
    def due(self, now_s: float) -> list[ScheduledClip]:
        """Clips whose start time has come (start_s <= now_s), in order, each returned once."""
        out: list[ScheduledClip] = []
        while len(self._fired) < len(self.turns):
            clip = self._resolve(len(self._fired), now_s)
            if clip is None or clip.start_s > now_s + _EPS_S:
                break
            self._fired.append(clip)
            out.append(clip)
        return out

    def next_start(self, now_s: float) -> float | None:
        """Start time of the next clip if it is already known (lets a player sleep until then)."""
        if len(self._fired) == len(self.turns):
            return None
        clip = self._resolve(len(self._fired), now_s)
        return None if clip is None else clip.start_s

    def done(self, now_s: float) -> bool:
        """All clips played and the bot's answer to the last one is over (plus ``tail_s``).

        "Over" uses the ``bot_audio_end`` rule of a virtual next turn: its anchor (event or
        timeout) has passed, the bot is silent, and ``tail_s`` has gone by since its last stop.
        """
        n = len(self.turns)
        if len(self._fired) < n:
            return False
        if now_s < self._clip_start(n - 1) + self.turns[n - 1].duration_s:
            return False
        anchor = self._anchor(n, "bot_audio_end", now_s)
        if anchor is None:
            return False
        t, reason, _ = anchor
        if reason == "timeout":
            return now_s >= t and not self._bot_speaking()
        last_stop = max(self._stops) if self._stops else t
        return not self._bot_speaking() and now_s >= max(t, last_stop) + self.tail_s

    def scheduled(self) -> list[ScheduledClip]:
        return list(self._fired)

    def truth(self, actual_starts: Mapping[int, float] | None = None) -> list[UtteranceTruth]:
        """Ground truth of every clip scheduled so far.

        Uses the player's real start times where given (here or via :meth:`clip_started`),
        otherwise the scheduled ones.
        """
        real = {**self._actual, **(actual_starts or {})}
        out: list[UtteranceTruth] = []
        for clip in self._fired:
            plan = self.turns[clip.turn]
            s = real.get(clip.turn, clip.start_s)
            out.append(UtteranceTruth(
                turn=clip.turn, clip_start_s=s, clip_end_s=s + plan.duration_s,
                speech_start_s=s + plan.speech_onset_s, speech_end_s=s + plan.speech_offset_s,
                expect=plan.expect, reason=clip.reason,
            ))
        return out

    # --- internals ---------------------------------------------------------------------------
    def _clip_start(self, k: int) -> float:
        return self._actual.get(k, self._fired[k].start_s)

    def _bot_speaking(self) -> bool:
        if not self._starts:
            return False
        return not self._stops or max(self._starts) > max(self._stops)

    def _first(self, events: list[float], at_or_after: float) -> float | None:
        later = [t for t in events if t >= at_or_after]
        return min(later) if later else None

    def _anchor(self, k: int, after: str, now_s: float) -> tuple[float, Literal["rule", "timeout"], str] | None:
        """(time, reason, note) of turn k's anchor event, or None while it is still unknown."""
        if after == "call_start":
            return 0.0, "rule", "call start"
        if k == 0:
            prev_start, prev_speech_end, prev_expect = 0.0, 0.0, None
            what = "the greeting"
        else:
            prev = self.turns[k - 1]
            prev_start = self._clip_start(k - 1)
            prev_speech_end = prev_start + prev.speech_offset_s
            prev_expect = prev.expect
            what = f"the reply to turn {k - 1}"
        if after == "prev_turn_end":
            if k == 0:
                raise ValueError("turn 0 cannot start after prev_turn_end: there is no previous turn")
            return prev_start + self.turns[k - 1].duration_s, "rule", f"end of turn {k - 1}'s clip"

        no_reply_at = prev_speech_end + self.no_reply_timeout_s
        if after == "bot_audio_end" and prev_expect == "no_interrupt":
            stop = self._first(self._stops, prev_start)
            if stop is not None:
                return stop, "rule", f"bot stopped after backchannel turn {k - 1}"
            if self._first(self._starts, prev_start) is None and not self._bot_speaking():
                if now_s >= no_reply_at:
                    return no_reply_at, "timeout", (
                        f"bot silent {self.no_reply_timeout_s:g} s after backchannel turn {k - 1}")
                return None
            cap = prev_start + self.max_reply_s
            if now_s >= cap:
                return cap, "timeout", f"bot still talking {self.max_reply_s:g} s after turn {k - 1}"
            return None

        reply = self._first(self._starts, prev_start)
        if reply is None:
            if now_s >= no_reply_at:
                return no_reply_at, "timeout", (
                    f"no bot audio for {what} within {self.no_reply_timeout_s:g} s; started by timeout")
            return None
        if after == "bot_audio_start":
            return reply, "rule", f"bot started {what}"
        stop = self._first(self._stops, reply)
        if stop is not None:
            return stop, "rule", f"bot finished {what}"
        cap = reply + self.max_reply_s
        if now_s >= cap:
            return cap, "timeout", f"{what} still playing after {self.max_reply_s:g} s"
        return None

    def _resolve(self, k: int, now_s: float) -> ScheduledClip | None:
        plan = self.turns[k]
        anchor = self._anchors.get(k) or self._anchor(k, plan.start.after, now_s)
        if anchor is None:
            return None
        if plan.start.after.startswith("bot_"):
            self._anchors[k] = anchor
        t, reason, note = anchor
        start = t + plan.start.delay_s
        if k > 0:
            prev_end = self._clip_start(k - 1) + self.turns[k - 1].duration_s
            if start < prev_end:
                start = prev_end
                note += f"; held until turn {k - 1}'s clip ended"
        return ScheduledClip(turn=k, start_s=start, reason=reason, note=note)
