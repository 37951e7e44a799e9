"""Every custom frame of the voice pipeline, in one place.

`SnapshotFrame` carries one engine step from the LLM service to the gate; `ChunkTextFrame` carries a
committed chunk from the gate to the TTS; `PlayoutMarkFrame` rides in the TTS's audio stream so the output
side knows when each word starts to be heard.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from pipecat.frames.frames import AggregatedTextFrame, DataFrame, SystemFrame

from engines.snapshot import Snapshot

CHUNK_TEXT_TYPE = "stable_chunk"


@dataclass
class SnapshotFrame(DataFrame):
    """One engine step. `ack` is set by the consumer once it has fed (and pinned) this snapshot."""

    snapshot: Snapshot | None = None
    gen_id: int = 0
    turn: int = -1
    pin: Callable[[int], None] | None = None
    ack: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class ChunkTextFrame(AggregatedTextFrame):
    """A committed chunk for TTS; `chunk_id` is unique within the call, `turn` is the reply turn.

    `speculative_id`: the `SpeculativeTextFrame` whose held audio says exactly this chunk (play that, do not
    synthesize again); None when there is none."""

    chunk_id: int = 0
    turn: int = -1
    speculative_id: int | None = None


@dataclass
class SpeculativeTextFrame(DataFrame):
    """A chunk the gate has not committed yet (`voicelab.rules.speculative`): synthesize it and hold the audio.

    Held audio is never played on its own: only a `ChunkTextFrame` with this `spec_id` plays it."""

    spec_id: int = 0
    text: str = ""
    turn: int = -1


@dataclass
class SpeculativeDropFrame(DataFrame):
    """Throw away the held audio of `spec_id` (its text was revised, the gate cut elsewhere, the reply ended)."""

    spec_id: int = 0
    reason: str = ""


@dataclass
class PlayoutMarkFrame(DataFrame):
    """Put in the audio stream by the TTS right before the audio of word `word_index` of a chunk.

    `word_index == len(words)` marks the end of the chunk's audio. The output transport sees it when all
    audio before it has been handed to the speaker, so it knows when that word starts to be heard.
    """

    chunk_id: int = 0
    turn: int = -1
    word_index: int = 0
    words: list[str] = field(default_factory=list)
    text: str = ""

    @property
    def is_end(self) -> bool:
        return self.word_index >= len(self.words)


@dataclass
class PlayoutPauseFrame(SystemFrame):
    """Asks the speaker to hold the rest of the bot's audio (the caller may be barging in).

    A system frame so it overtakes queued audio. The engine and the TTS keep going; the speaker plays nothing
    more until a `PlayoutResumeFrame` (continue at the exact next sample) or an `InterruptionFrame` (drop it).
    """

    reason: str = ""


@dataclass
class PlayoutResumeFrame(SystemFrame):
    """Continue the paused playout where it stopped (it was a backchannel, a cough or nothing)."""

    reason: str = ""


@dataclass
class PreemptFrame(DataFrame):
    """The turn-end strategy's best transcript of a turn not confirmed yet: the engine may start on it."""

    text: str = ""


@dataclass
class HoldFrame(DataFrame):
    """Everything after this frame belongs to a preemptive reply: hold it before the speaker."""

    gen_id: int = 0


@dataclass
class ReleaseFrame(DataFrame):
    """The turn was confirmed with the words the held reply answers: let it play."""

    gen_id: int = 0
