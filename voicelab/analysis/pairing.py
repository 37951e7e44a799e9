"""How two runs' turns are paired: by (fixture, turn index, repetition), where the n-th play of a fixture turn in
a run is its repetition n. `voicelab compare` pairs figures so (`voicelab.analysis.compare`) and expectation
verdicts so (`voicelab.analysis.agreement`). Plain Python."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

Key = tuple[str, int, int]  # fixture name, turn index, repetition (occurrence) of that fixture turn


def turn_keys(turns: Iterable[tuple[str, int]], fixture_of: Callable[[str], str]) -> Iterator[Key]:
    """The key of each (call_id, turn), in the order given; `fixture_of` names the fixture a call played."""
    seen: dict[tuple[str, int], int] = defaultdict(int)
    for call_id, turn in turns:
        k = (fixture_of(str(call_id)), int(turn))
        yield (k[0], k[1], seen[k])
        seen[k] += 1
