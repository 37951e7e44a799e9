"""`voicelab.pipeline.services.shared_voice`: one lock per voice object, so calls played at once never phonemize or
synthesize at the same time (espeak-ng is process-global)."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator

import pytest

from voicelab.pipeline.services.shared_voice import SerializedVoice, serialized


class CountingVoice:
    """A voice whose steps record how many threads were inside one at the same time."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.sample_rate = 22050
        self._guard = threading.Lock()

    def _step(self) -> None:
        with self._guard:
            self.inside += 1
            self.most = max(self.most, self.inside)
        time.sleep(0.002)
        with self._guard:
            self.inside -= 1

    def phonemize(self, text: str) -> list[str]:
        self._step()
        return text.split()

    def synthesize(self, text: str, **_kw: object) -> Iterator[str]:
        for w in text.split():
            self._step()
            yield w

    def __eq__(self, other: object) -> bool:  # unhashable, as PiperVoice (a dataclass) is
        return self is other

    __hash__ = None  # type: ignore[assignment]


def test_same_voice_shares_one_lock_and_steps_never_overlap() -> None:
    voice = CountingVoice()
    a, b = serialized(voice), serialized(voice)
    assert isinstance(a, SerializedVoice) and a._lock is b._lock
    assert serialized(a) is a  # already serialized: as is
    assert a.sample_rate == 22050  # other attributes pass through

    def work(v: SerializedVoice) -> None:
        for _ in range(10):
            assert list(v.synthesize("one two three")) == ["one", "two", "three"]
            v.phonemize("four five")

    threads = [threading.Thread(target=work, args=(v,)) for v in (a, b, serialized(voice), serialized(voice))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert voice.most == 1


def test_other_voices_have_their_own_lock() -> None:
    v1, v2 = CountingVoice(), CountingVoice()
    assert serialized(v1)._lock is not serialized(v2)._lock
    assert serialized(None) is None


def test_a_voice_collected_while_another_is_registered_does_not_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    """A garbage collection inside `serialized` (set off by the allocations of the finalizer it registers) runs a
    collected voice's finalizer on the same thread. With a guard lock around the table that finalizer waited for
    its own thread for good: a call hung, idle, in a CI run. Here the collection is made to come at that moment."""
    register = weakref.finalize

    def collect_then_register(*args: object) -> weakref.finalize:
        gc.collect()  # what an allocation past the collector's threshold does
        return register(*args)

    dead = CountingVoice()
    dead.cycle = dead  # type: ignore[attr-defined]  # only the cyclic collector frees it
    serialized(dead)
    del dead
    monkeypatch.setattr(weakref, "finalize", collect_then_register)
    done = threading.Event()

    def register_a_new_voice() -> None:
        serialized(CountingVoice())
        done.set()

    worker = threading.Thread(target=register_a_new_voice, daemon=True)
    worker.start()
    worker.join(timeout=30)  # a deadlock never ends: 30 s is no bound on the machine's speed
    assert done.is_set()
