"""Whisper passes while the caller speaks, so that the final text is ready soon after the speech ends.

Whisper is not a streaming model: each pass transcribes the whole utterance so far. `StreamingWhisper`
hides that cost behind the caller's speech: it is fed audio chunks, and every `partial_every_s` of new
audio it starts a pass in one worker thread (never more than one in flight: on 2 cores a second pass
would only slow the first). `finish()` (end of speech) starts the final pass over all the audio and
returns a future; if the pass in flight (or the last one done) already covers all the audio, that pass
*is* the final and no new pass runs. `partial` is the latest partial at any moment, at no cost.

The early final: a VAD confirms the end of speech only after `stop_secs` of silence (0.2 s by default), and the
final pass then costs ~100-200 ms more on the critical path. `speech_pausing()` (the VAD's first silent
frame) starts that pass at once over the audio so far; `speech_resumed()` (speech again before the VAD
confirmed the stop) drops it; `finish()` takes it as the final when no pass covers more. It leaves out
only audio the VAD judged silent, yet that is not always silence: the first silent frame can fall inside a
soft last sound, and the early pass then misreads the last word, the very word that decides a cut-off
("and so my fellow americans" read "... america", judged complete: the JFK caller cut into in 2 of 2 real-call
runs). So it is off by default (`PipelineConfig.stt_early_final`); the pass then lands up to `stop_secs` later.

Callbacks (`on_partial`, `on_final`) run in the worker thread; an asyncio caller hands them to its loop
with `loop.call_soon_threadsafe`. Results of an utterance that `start()` has since replaced are dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol

import numpy as np

from voicelab.pcm import SAMPLE_RATE

if TYPE_CHECKING:  # the recognisers' module loads ctranslate2: a caller of this protocol need not
    from voicelab.speech.whisper import Transcript


class Recognizer(Protocol):
    """A whole-utterance recognizer: Whisper tiny.en or base, Moonshine, or a test's stand-in."""

    def transcribe(self, audio: np.ndarray) -> Transcript: ...


class StreamingWhisper:
    """Partial passes during an utterance and one final pass at its end (module doc)."""

    def __init__(self, recognizer: Recognizer, *, partial_every_s: float = 0.5, min_partial_s: float = 0.3,
                 on_partial: Callable[[Transcript], None] | None = None,
                 on_final: Callable[[Transcript], None] | None = None) -> None:
        if partial_every_s <= 0:
            raise ValueError(f"partial_every_s: must be positive, got {partial_every_s}")
        self._rec = recognizer
        self._every = int(partial_every_s * SAMPLE_RATE)
        self._min = int(min_partial_s * SAMPLE_RATE)
        self._on_partial = on_partial
        self._on_final = on_final
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper")
        self._lock = threading.RLock()  # a pass that lands at once calls back under the caller's lock
        self._chunks: list[np.ndarray] = []
        self._n = 0  # samples in this utterance
        self._utt = 0  # utterance counter: results of older ones are dropped
        self._in_flight: tuple[int, Future[Transcript]] | None = None  # (samples covered, pass)
        self._last_pass_n = 0  # samples covered by the latest pass started
        self._last_done: tuple[int, Transcript] | None = None
        self._final: Future[Transcript] | None = None
        self._early: tuple[int, Future[Transcript]] | None = None  # (samples covered, pass) at the speech's pause
        self.partial: Transcript | None = None
        self.passes = 0  # passes started in this utterance
        # partial passes on or off: off when nobody reads them, so the final pass never queues behind one
        # (the single worker runs one pass at a time; a partial in flight at the end delays the final by its length)
        self.partials = True

    # ---- caller side ----------------------------------------------------------------------------

    def start(self) -> None:
        """A new utterance; whatever the previous one had in flight is ignored when it lands."""
        with self._lock:
            self._utt += 1
            self._chunks, self._n = [], 0
            self._in_flight, self._last_done, self._final = None, None, None
            self._early = None
            self._last_pass_n = 0
            self.partial = None
            self.passes = 0

    def reopen(self) -> None:
        """The speech goes on after a `finish()` (a pause inside the caller's turn): later audio extends the
        same utterance, and the next `finish()` transcribes all of it."""
        with self._lock:
            self._final = None
            self._early = None

    def speech_pausing(self) -> None:
        """The speech seems to have stopped (the VAD's first silent frame, before its stop window): start the
        pass over the audio so far that `finish()` takes as the final unless `speech_resumed()` comes first."""
        with self._lock:
            if self._final is not None or self._early is not None or self._n == 0:
                return
            if self._in_flight is not None and self._in_flight[0] == self._n:
                self._early = self._in_flight  # the partial under way already covers it
            elif self._last_done is not None and self._last_done[0] == self._n:
                done: Future[Transcript] = Future()
                done.set_result(self._last_done[1])
                self._early = (self._n, done)  # so does the last one done
            else:
                self._early = (self._n, self._start_pass())

    def speech_resumed(self) -> None:
        """Speech again before the VAD confirmed the stop: the early pass is not the final."""
        with self._lock:
            early, self._early = self._early, None
            if early is not None and (self._in_flight is None or early[1] is not self._in_flight[1]):
                early[1].cancel()  # its own pass, still queued behind another: it never runs

    def feed(self, chunk: np.ndarray) -> None:
        """Append float32 16 kHz samples (int16 accepted) and start a partial pass if one is due."""
        a = np.asarray(chunk)
        a = a.astype(np.float32) / 32768.0 if a.dtype == np.int16 else a.astype(np.float32, copy=False)
        with self._lock:
            if self._final is not None:
                return  # the utterance is finished; audio after it belongs to the next start()
            self._chunks.append(a.reshape(-1))
            self._n += a.size
            due = self._n >= self._min and self._n - self._last_pass_n >= self._every
            if due and self._in_flight is None and self._early is None and self.partials:
                self._submit(final=False)

    def finish(self) -> Future[Transcript]:
        """End of speech: the future of the final transcript (reuses a pass that covers all the audio)."""
        with self._lock:
            if self._final is not None:
                return self._final
            if self._in_flight is not None and self._in_flight[0] == self._n:
                self._final = self._chain_final(self._in_flight[1])
            elif self._last_done is not None and self._last_done[0] == self._n:
                done: Future[Transcript] = Future()
                done.set_result(self._last_done[1])
                self._final = done
                self._notify_final(self._last_done[1])
            elif self._early is not None and not self._early[1].cancelled():
                self._final = self._chain_final(self._early[1], notify=True)
            else:
                self._final = self._submit(final=True)
            return self._final

    @property
    def audio_s(self) -> float:
        return self._n / SAMPLE_RATE

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    # ---- worker side ----------------------------------------------------------------------------

    def _start_pass(self) -> Future[Transcript]:
        # called with the lock held: a pass over all the audio so far
        audio = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.float32)
        self._chunks = [audio]
        self.passes += 1
        self._last_pass_n = self._n
        return self._pool.submit(self._rec.transcribe, audio)

    def _submit(self, *, final: bool) -> Future[Transcript]:
        # called with the lock held
        n, utt = self._n, self._utt
        fut = self._start_pass()
        if not final:
            self._in_flight = (n, fut)
        fut.add_done_callback(lambda f: self._landed(f, n, utt, final))
        return fut

    def _chain_final(self, fut: Future[Transcript], *, notify: bool = False) -> Future[Transcript]:
        # the pass in flight (or the early one) covers all the audio: its result is the final
        out: Future[Transcript] = Future()
        utt = self._utt

        def relay(f: Future[Transcript]) -> None:
            if f.cancelled():
                out.cancel()
            elif f.exception() is not None:
                out.set_exception(f.exception())  # type: ignore[arg-type]
            else:
                out.set_result(f.result())
                if notify and utt == self._utt:
                    self._notify_final(f.result())

        fut.add_done_callback(relay)
        return out

    def _landed(self, fut: Future[Transcript], n: int, utt: int, final: bool) -> None:
        if fut.cancelled() or fut.exception() is not None:
            with self._lock:
                if utt == self._utt and not final:
                    self._in_flight = None
            return
        t = fut.result()
        with self._lock:
            if utt != self._utt:
                return
            self._last_done = (n, t)
            if final:
                notify_final = True
            else:
                self._in_flight = None
                self.partial = t
                notify_final = self._final is not None and n == self._n  # this partial became the final
                if self._final is None and self._early is None and self._n - n >= self._every:
                    self._submit(final=False)  # audio came in during the pass: the next one is due
        if final or notify_final:
            self._notify_final(t)
        elif self._on_partial is not None:
            self._on_partial(t)

    def _notify_final(self, t: Transcript) -> None:
        if self._on_final is not None:
            self._on_final(t)
