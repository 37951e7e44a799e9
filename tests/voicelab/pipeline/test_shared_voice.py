"""`voicelab.pipeline.services.shared_voice`: one lock per voice object, so calls played at once never phonemize or
synthesize at the same time (espeak-ng is process-global)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

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
