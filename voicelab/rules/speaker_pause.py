"""What the bot's speaker does on a pause, a resume and an interruption: one rule for every output side.

Plain asyncio, no pipecat. Four output sides honour `--barge-in pause`: the recording speaker of a fixture
call, the browser's WebRTC output, the phone line's media-stream output (all three hold audio), and
`LivePlayout`, which logs what the browser's output sent. Each turns its frames into `pause`, `resume` and
`interrupt` calls on a `SpeakerPause`, which decides

- whether audio may go out: a write waits in `wait()` while paused (`PlayoutHold`), so a resume continues at
  the exact next sample, and an interruption during a pause drops the held audio (`interrupt`, then
  `release` once the transport has cleared its queue);
- the ledger's rows, for a side that keeps a `PlayoutLedger`: a pause is logged where the audio handed over
  so far ends, at once, or, for a side that sees audio only after it was sent (`log_lag_ns`), once that
  audio had time to come through (`tick`), or at the resume or interruption that follows; a resume is
  logged where the held audio lands (`landed`) or, when no write was held, at once; an interruption cuts
  the open chunks.
"""

from __future__ import annotations

from voicelab.measure.playout_ledger import PlayoutLedger
from voicelab.rules.playout_hold import PlayoutHold


class SpeakerPause:
    """Pause, resume and interruption of one output side (see the module doc)."""

    def __init__(self, ledger: PlayoutLedger | None = None, *, log_lag_ns: int | None = None) -> None:
        self.hold = PlayoutHold()
        self.ledger = ledger
        self._lag_ns = log_lag_ns
        self._pending: tuple[int, int, str] | None = None  # a pause not logged yet: (call ns it came, play ns, reason)
        self._held_write = False  # a write is waiting in `wait`
        self._resume: str | None = None  # reason of a resume the held write logs where its audio lands

    @property
    def paused(self) -> bool:
        return self.hold.paused

    def pause(self, reason: str = "", play_ns: int = 0, now_ns: int = 0) -> None:
        """Hold the audio not handed over yet; `play_ns`: where the audio handed over so far ends."""
        if not self.hold.pause() or self.ledger is None:
            return
        if self._lag_ns is None:
            self.ledger.paused(play_ns, reason)
        else:
            self._pending = (now_ns, play_ns, reason)

    def resume(self, reason: str = "", play_ns: int = 0, sent_ns: int = 0) -> None:
        """Let the held audio go on; `sent_ns`: where the audio seen sent so far ends (a lagging side)."""
        if not self.hold.paused:
            return
        if self.ledger is not None:
            self.flush(sent_ns)
            if self._held_write:
                self._resume = reason  # logged by that write, where its sample lands
            else:
                self.ledger.resumed(play_ns, reason)  # nothing held: the silence ends now
        self.hold.resume()

    def interrupt(self, play_ns: int = 0, sent_ns: int = 0) -> None:
        """An interruption, before the transport clears its queue: held audio is dropped (then `release`),
        audio already handed over still plays, open chunks stop at `play_ns`."""
        if self.ledger is not None:
            self.flush(sent_ns)
            if self._resume is not None:  # resumed, but the held write has not run yet
                self.ledger.resumed(play_ns, self._resume)
                self._resume = None
        self.hold.cut()
        if self.ledger is not None:
            self.ledger.interrupted(play_ns)

    def release(self) -> None:
        """After an interruption, once the transport dropped its queue: a held write returns False."""
        self.hold.release()

    async def wait(self) -> bool:
        """Before a write hands audio over: True to play it, False to drop it (interrupted while held)."""
        self._held_write = self.hold.paused
        played = await self.hold.wait()
        self._held_write = False
        return played

    def landed(self, t_ns: int) -> None:
        """The audio of the write that waited starts at `t_ns`: the pause's silence ends there."""
        if self._resume is not None and self.ledger is not None:
            self.ledger.resumed(t_ns, self._resume)
            self._resume = None

    def tick(self, now_ns: int, sent_ns: int) -> None:
        """A lagging side's clock: log a pending pause once the audio sent before it had time to come through."""
        if self._pending is not None and self._lag_ns is not None and now_ns - self._pending[0] >= self._lag_ns:
            self.flush(sent_ns)

    def flush(self, sent_ns: int) -> None:
        """Log a pending pause where the audio sent before it ends."""
        if self._pending is not None and self.ledger is not None:
            _, at_ns, reason = self._pending
            self._pending = None
            self.ledger.paused(max(at_ns, sent_ns), reason)
