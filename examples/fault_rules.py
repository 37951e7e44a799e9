"""Planted faults for the reference agents (`--fault NAME`): what each fault changes, as plain rules.

A fault is a real behaviour of the agent on the media stream, one at a time, so that a tester can be scored on
faults planted on purpose. The agents wire these rules into pipecat (`fault_processors.py`); this module is
plain Python (no pipecat), so each rule is testable alone.

| fault | what the agent does |
|---|---|
| `none` | the clean agent, as without the option |
| `cuts-in` | ends the caller's turn at any pause over 300 ms (no turn model), so it answers mid-sentence |
| `deaf` | keeps talking through a barge-in (the caller's voice never interrupts it) |
| `jumpy` | stops for every backchannel and cough: any sound from the caller over 40 ms while it talks |
| `slow` | waits 1.5 s more before every answer |
| `wrong-fact` | says a different fact (the echo agent echoes one word wrong; the booking agent reads back a wrong day) |
| `revises` | starts its first answer with another sentence, stops it 1.2 s in (`clear`) and says the answer |
| `mute-turn` | never answers the caller's second turn |
| `drops` | closes the media stream 1 s into its first answer |
| `garbled` | its replies have 200 ms of silence every 0.8 s (packets lost), from 0.3 s into each sentence |
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FAULTS = ("none", "cuts-in", "deaf", "jumpy", "slow", "wrong-fact", "revises", "mute-turn", "drops", "garbled")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
SOUND_DBFS = -40.0  # a caller frame at least this loud (RMS) is a sound to the jumpy agent
# the sentence the `revises` agent starts with and abandons: long enough to be cut mid-way, and one sentence (a
# TTS pause between sentences reads as the reply's end to the caller, who then talks over the cut)
ABANDONED = "One moment while I look up the opening hours for you and then I will read every one of them back to you"


@dataclass(frozen=True)
class FaultPlan:
    """What one fault changes in the agent; the defaults are the clean agent (pipecat's own defaults)."""

    fault: str = "none"
    # the user turn: None keeps pipecat's default (Silero VAD's defaults, smart-turn v3 ending the turn)
    vad_start_s: float | None = None
    vad_confidence: float | None = None
    vad_min_volume: float | None = None
    turn_end_pause_s: float | None = None  # end the turn at this much silence instead of asking smart-turn
    interruptions: bool = True  # the caller's voice interrupts the agent
    stop_on_sound_s: float | None = None  # any caller sound this long (over SOUND_DBFS) stops the agent
    # the replies, counted from 0 (the greeting) in the order the agent starts them
    reply_delay_s: float = 0.0  # before every reply but the greeting
    mute_reply: int | None = None  # this reply is never spoken
    drop_reply: int | None = None  # the stream is closed `drop_after_s` into this reply
    drop_after_s: float = 1.0
    revise_reply: int | None = None  # this reply starts with ABANDONED, cleared `revise_after_s` in
    revise_after_s: float = 1.2
    wrong_fact: bool = False
    gap_every_s: float | None = None  # silence `gap_s` long every `gap_every_s` of each reply's audio
    gap_s: float = 0.2
    gap_first_s: float = 0.3


def plan(fault: str) -> FaultPlan:
    """The plan of one fault name (FAULTS); ValueError for another name."""
    if fault not in FAULTS:
        raise ValueError(f"--fault {fault}: one of {', '.join(FAULTS)}")
    vad = 0.2  # pipecat's VAD stop time: the turn-end pause adds to it
    return {
        "none": FaultPlan(),
        "cuts-in": FaultPlan("cuts-in", turn_end_pause_s=0.3 - vad),
        "deaf": FaultPlan("deaf", interruptions=False),
        "jumpy": FaultPlan("jumpy", stop_on_sound_s=0.04),
        "slow": FaultPlan("slow", reply_delay_s=1.5),
        "wrong-fact": FaultPlan("wrong-fact", wrong_fact=True),
        "revises": FaultPlan("revises", revise_reply=1),
        "mute-turn": FaultPlan("mute-turn", mute_reply=2),
        "drops": FaultPlan("drops", drop_reply=1),
        "garbled": FaultPlan("garbled", gap_every_s=0.8),
    }[fault]


def frame_dbfs(pcm: bytes) -> float:
    """RMS level of 16-bit little-endian PCM in dBFS (-inf for silence or no samples)."""
    n = len(pcm) // 2
    if n == 0:
        return float("-inf")
    samples = memoryview(pcm[:2 * n]).cast("h")
    mean_square = sum(x * x for x in samples) / n
    return 10.0 * math.log10(mean_square / 32768.0 ** 2) if mean_square > 0 else float("-inf")


class SoundRun:
    """How long the caller's sound has lasted: fed each input frame's level and length, says when a run of
    loud frames reaches `need_s` (once per run)."""

    def __init__(self, need_s: float, dbfs: float = SOUND_DBFS) -> None:
        self.need_s, self.dbfs, self.run_s, self.fired = need_s, dbfs, 0.0, False

    def feed(self, level_dbfs: float, seconds: float) -> bool:
        if level_dbfs < self.dbfs:
            self.run_s, self.fired = 0.0, False
            return False
        self.run_s += seconds
        if self.run_s >= self.need_s and not self.fired:
            self.fired = True
            return True
        return False


def next_day(day: str) -> str:
    """The day after `day` (any case; the result capitalised): the booking agent's wrong read-back."""
    return DAYS[(DAYS.index(day.lower()) + 1) % len(DAYS)].capitalize()


def wrong_word(text: str) -> str:
    """`text` with one word wrong: its first day name becomes the next day; else its first number (digits or a
    number word) becomes the next number; else its last word becomes "Sunday". Punctuation stays in place."""
    words = text.split(" ")
    bare = [w.strip(".,!?;:").lower() for w in words]
    for i, b in enumerate(bare):
        if b in DAYS:
            return _swap(words, i, next_day(b))
    for i, b in enumerate(bare):
        if b.isdigit():
            return _swap(words, i, str(int(b) + 1))
        if b in NUMBER_WORDS:
            return _swap(words, i, NUMBER_WORDS[(NUMBER_WORDS.index(b) + 1) % len(NUMBER_WORDS)])
    last = max((i for i, b in enumerate(bare) if b), default=None)
    return text if last is None else _swap(words, last, "Sunday")


def _swap(words: list[str], i: int, new: str) -> str:
    w = words[i]
    core = w.strip(".,!?;:")
    start = w.find(core)
    return " ".join([*words[:i], w[:start] + new + w[start + len(core):], *words[i + 1:]])


def gap_spans(start: int, n: int, sample_rate: int, every_s: float, gap_s: float = 0.2,
              first_s: float = 0.3) -> list[tuple[int, int]]:
    """The samples to silence in a chunk of `n` samples that begins `start` samples into a reply's audio: gaps
    `gap_s` long at first_s, first_s + every_s, ..., of the reply; (from, to) offsets within the chunk."""
    every, gap, first = round(every_s * sample_rate), round(gap_s * sample_rate), round(first_s * sample_rate)
    if every <= 0 or gap <= 0 or n <= 0:
        return []
    out = []
    k = max(0, (start - first - gap) // every + 1) if start > first else 0
    while True:
        a = first + k * every
        if a >= start + n:
            return out
        lo, hi = max(a, start), min(a + gap, start + n)
        if hi > lo:
            out.append((lo - start, hi - start))
        k += 1
