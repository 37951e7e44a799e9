"""A Piper voice shared by calls that run at once: phonemizing and each synthesis step take one lock.

Piper phonemizes through a process-global espeak-ng instance, which is not safe to call from two threads at
once; every TTS service synthesizes in a worker thread of its own, so calls played together (`voicelab run
--concurrency N`) and browser sessions (`voicelab serve`) take turns here. `serialized(voice)` hands every
caller of the same voice object the same lock.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import Any

_LOCKS: dict[int, threading.Lock] = {}  # id(voice) -> its lock, dropped when the voice goes


class SerializedVoice:
    """A voice whose phonemize and synthesis steps hold `lock` (see the module doc)."""

    def __init__(self, voice: Any, lock: threading.Lock) -> None:
        self._voice = voice
        self._lock = lock

    def phonemize(self, text: str) -> Any:
        with self._lock:
            return self._voice.phonemize(text)

    def synthesize(self, text: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        it = iter(self._voice.synthesize(text, *args, **kwargs))
        while True:
            with self._lock:
                chunk = next(it, None)
            if chunk is None:
                return
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._voice, name)


def serialized(voice: Any) -> Any:
    """`voice` behind the one lock of that voice object (a voice already serialized is returned as is)."""
    if isinstance(voice, SerializedVoice) or voice is None:
        return voice
    key = id(voice)  # PiperVoice is an unhashable dataclass: keyed by identity, forgotten when it is collected
    # no lock around the table: `setdefault` and `pop` are atomic. A guard lock here once hung a call for good: the
    # finalizer's allocations set off a garbage collection, which ran a collected voice's finalizer, which waited for
    # the guard its own thread held
    new = threading.Lock()
    lock = _LOCKS.setdefault(key, new)
    if lock is new:
        weakref.finalize(voice, _LOCKS.pop, key, None)
    return SerializedVoice(voice, lock)
