"""How a phone agent sends its audio down a media stream: at real time plus a small lead, and what a `clear` drops.

Pure logic on the sender's monotonic clock (ns), no sleeping and no pipecat. A telephone carrier queues the
agent's `media` and plays it out in real time (Twilio Media Streams: "mark" and "clear" messages,
https://www.twilio.com/docs/voice/media-streams/websocket-messages#send-a-clear-message); whatever is queued
there when the agent pauses plays on, so the less it holds, the faster a pause is heard. `SendPacer`

- projects when the carrier will have played everything sent so far (`end`: playout starts when audio arrives
  and runs at real time, with a gap only when the queue ran dry) and says how long to wait before the next
  chunk so that the carrier holds no more than `lead` ahead of what it is playing (`wait_ns`);
- on a pause, says whether the carrier holds anything worth a `clear` and keeps the part of the sent audio
  the carrier had not played yet (the projection), to be sent again on resume: the caller hears the pause at
  once and loses no word (`pause`, `resume`); audio that went out after the `clear` (a send already under way
  when the pause came) asks for another `clear` and joins what is kept (`sent` returns True);
- on an interruption the carrier's queue is cleared for good: nothing is kept (`cut`).

The projection is the sender's, not the carrier's: a carrier that moves audio out of its queue a frame at a
time (20 ms) holds up to one frame less than projected when the `clear` lands, so up to one frame is heard
twice on a resume (never a gap), and network delay adds to that.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

NS_PER_MS = 1_000_000
# Two 20 ms media frames: one the carrier is playing while the next waits, so a send that slips by up to one
# frame (the agent's event loop is shared with its recogniser, VAD and TTS) does not leave a gap. A pause
# clears what the carrier holds, so the lead costs no stop latency; it bounds what a send may slip.
LEAD_MS = 40


@dataclass(frozen=True)
class SentChunk:
    start_ns: int  # when the carrier starts playing it (projected)
    end_ns: int
    audio: bytes


@dataclass
class SendPacer:
    """One media stream's sending side (see the module doc). `sample_bytes`: bytes of one sample, all channels."""

    lead_ns: int = LEAD_MS * NS_PER_MS
    sample_bytes: int = 2
    end_ns: int | None = None  # when everything sent so far will have played (projected); None: nothing held
    paused: bool = False
    _chunks: deque[SentChunk] = field(default_factory=deque)  # sent, maybe not played yet
    _kept: bytearray = field(default_factory=bytearray)  # dropped by the carrier on a pause, for the resume

    def __post_init__(self) -> None:
        if self.lead_ns < 0:
            raise ValueError(f"lead: {self.lead_ns} ns; needs at least 0")
        if self.sample_bytes < 1:
            raise ValueError(f"sample_bytes: {self.sample_bytes}; needs at least 1")

    def held_ns(self, now_ns: int) -> int:
        """How much sent audio the carrier has not played yet at `now_ns` (projected)."""
        return 0 if self.end_ns is None else max(0, self.end_ns - now_ns)

    def wait_ns(self, now_ns: int) -> int:
        """How long to wait before sending the next chunk: until the carrier holds no more than the lead."""
        return max(0, self.held_ns(now_ns) - self.lead_ns)

    def sent(self, now_ns: int, audio: bytes, duration_ns: int) -> bool:
        """`audio` (playing `duration_ns`) left at `now_ns`. True: it went out after a pause's `clear`, so the
        carrier must be cleared again; the audio is kept for the resume instead."""
        if self.paused:
            self._kept += audio
            return True
        start = max(self.end_ns or now_ns, now_ns)
        self.end_ns = start + max(0, duration_ns)
        self._chunks.append(SentChunk(start, self.end_ns, bytes(audio)))
        self._forget(now_ns)
        return False

    def pause(self, now_ns: int) -> bool:
        """The speaker pauses: keep what the carrier has not played; True when it holds audio to `clear`."""
        if self.paused:
            return False
        self.paused = True
        self._kept += self._unplayed(now_ns)
        holds = self.held_ns(now_ns) > 0
        self._reset()
        return holds

    def resume(self) -> bytes:
        """The speaker resumes: the audio the pause's `clear` dropped, to send first (empty when none)."""
        kept = bytes(self._kept)
        self.paused = False
        self._kept.clear()
        return kept

    def cut(self) -> None:
        """An interruption: the carrier's queue was cleared for good and nothing kept is ever sent."""
        self.paused = False
        self._kept.clear()
        self._reset()

    def _reset(self) -> None:
        self.end_ns = None
        self._chunks.clear()

    def _forget(self, now_ns: int) -> None:
        while self._chunks and self._chunks[0].end_ns <= now_ns:
            self._chunks.popleft()

    def _unplayed(self, now_ns: int) -> bytes:
        """The sent audio not played by `now_ns`: whole chunks after it, the tail of the one playing at it."""
        self._forget(now_ns)
        out = bytearray()
        for c in self._chunks:
            if c.start_ns >= now_ns:
                out += c.audio
                continue
            samples = len(c.audio) // self.sample_bytes
            span = c.end_ns - c.start_ns
            left = round(samples * (c.end_ns - now_ns) / span) if span > 0 else 0
            out += c.audio[len(c.audio) - left * self.sample_bytes:] if left else b""
        return bytes(out)
