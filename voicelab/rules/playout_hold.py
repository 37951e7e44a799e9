"""The pause switch of a speaker (`PlayoutPauseFrame` / `PlayoutResumeFrame`), shared by every output side.

Plain asyncio (no pipecat). An output transport calls `wait()` before it hands a frame of audio to its
speaker: while paused the write waits there, holding that frame and, behind it, the rest of the reply, so a
resume continues at the exact next sample. An interruption during a pause (`cut`, then `release` once the
transport has cleared its queue) wakes the held write with False: its audio is dropped, never heard.
"""

from __future__ import annotations

import asyncio


class PlayoutHold:
    """Whether the speaker may play; one per output transport."""

    def __init__(self) -> None:
        self._playing = asyncio.Event()
        self._playing.set()
        self._cut = 0  # bumped by an interruption during a pause: held writes drop their audio

    @property
    def paused(self) -> bool:
        return not self._playing.is_set()

    def pause(self) -> bool:
        """Hold the audio not handed over yet; True when this started a pause."""
        if self.paused:
            return False
        self._playing.clear()
        return True

    def resume(self) -> bool:
        """Let the held audio continue where it stopped; True when a pause ended."""
        if not self.paused:
            return False
        self._playing.set()
        return True

    def cut(self) -> None:
        """An interruption: the audio held now is never to be played (wake it with `release`)."""
        if self.paused:
            self._cut += 1

    def release(self) -> None:
        """After an interruption, once the transport dropped its queue: held writes return False."""
        self._playing.set()

    async def wait(self) -> bool:
        """Before handing a frame to the speaker: True to play it, False to drop it (cut while held)."""
        if self._playing.is_set():
            return True
        cut = self._cut
        await self._playing.wait()
        return cut == self._cut
