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
_LOCKS_GUARD = threading.Lock()


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
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.Lock()
            weakref.finalize(voice, _forget, key)
    return SerializedVoice(voice, lock)


def _forget(key: int) -> None:
    with _LOCKS_GUARD:
        _LOCKS.pop(key, None)
