"""The snapshot: what an engine shows after each denoising step (or each appended token).

Plain Python, no torch: the gate, the metrics and the replay engine read snapshots without
loading a model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The generated canvas after one step.

    Positions are indices into the *response* (the generated part), never into the prompt.
    """

    step: int  # 0-based step index (AR engines: one step per appended token)
    t_ns: int  # time.monotonic_ns() when the step finished
    tokens: tuple[int, ...]  # token id at every canvas position (the mask id where masked)
    masked: tuple[bool, ...]  # True where the position is still masked
    confidence: tuple[float, ...]  # probability of the current (or best guessed) token per position
    guesses: tuple[int, ...]  # the model's best guess at every position (equals tokens where unmasked)
    pieces: tuple[str, ...]  # decoded text of each unmasked position's token; '' where masked or EOS
    eos: int | None  # first unmasked EOS position whose whole prefix is unmasked: the answer ends there
    block_size: int  # tokens per block (the canvas length for one-block samplers; 1 for AR)
    blocks_done: int  # tokens in blocks the sampler has finished: they never change again
    pinned: int  # tokens the consumer has pinned: they never change again
    forwards: int  # cumulative model forward passes for this generation
    done: bool  # generation finished (answer complete, canvas full or cancelled)
    revised: tuple[int, ...] = field(default=())  # positions whose unmasked token changed or was re-masked this step

    @property
    def prefix_len(self) -> int:
        """Length of the contiguous unmasked prefix, cut at the answer's EOS."""
        n = 0
        for m in self.masked:
            if m:
                break
            n += 1
        return n if self.eos is None else min(n, self.eos)

    def text(self, n: int | None = None) -> str:
        """Decoded text of the first n positions (default: the contiguous unmasked prefix)."""
        n = self.prefix_len if n is None else n
        return "".join(self.pieces[:n])

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Snapshot:
        tuple_fields = ("tokens", "masked", "confidence", "guesses", "pieces", "revised")
        kw = {k: (tuple(v) if k in tuple_fields else v) for k, v in d.items() if k in cls.__slots__}
        return cls(**kw)
