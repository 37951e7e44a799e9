"""Snapshots from streamed text: how engines that send text instead of token ids (HTTP streams,
timing profiles) show their answer to the gate exactly as the AR and diffusion engines do.

Each canvas position holds one piece of text: a streamed delta when the text is appended, a word
(with its leading whitespace) when a whole draft replaces the previous one. Token ids are
synthetic: the same piece always gets the same id within one canvas, so `stable:K` and the
revision counts compare positions as they do for real tokens.

Plain Python, no torch.
"""

from __future__ import annotations

import re
import time

from engines.snapshot import Snapshot

MASK_ID = 1  # the tiny models' ids, so a canvas reads like theirs
EOS_ID = 2
_FIRST_ID = 3
_WORDS = re.compile(r"\s*\S+|\s+")


def split_pieces(text: str) -> list[str]:
    """A draft as canvas pieces: each word with the whitespace before it (trailing space kept)."""
    return _WORDS.findall(text)


class TextCanvas:
    """The growing (or redrafted) answer of one generation; every update returns the next Snapshot."""

    def __init__(self, block_size: int = 1) -> None:
        self.block_size = block_size
        self.pieces: list[str] = []
        self._ids: dict[str, int] = {}
        self.steps = 0
        self.pinned = 0
        self.blocks_done = 0  # positions the stream promises never to change (AR: all of them)
        self.revisions = 0  # positions revised over the whole generation

    def _id(self, piece: str) -> int:
        return self._ids.setdefault(piece, _FIRST_ID + len(self._ids))

    def pin(self, n: int) -> None:
        self.pinned = max(self.pinned, n)

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def append(self, piece: str, t_ns: int | None = None) -> Snapshot:
        """One streamed delta appended as one position (append-only: nothing is revised).

        An appended piece is final; the final prefix (`blocks_done`) grows if everything before was final.
        """
        if self.blocks_done == len(self.pieces):
            self.blocks_done += 1
        self.pieces.append(piece)
        return self._snapshot((), t_ns)

    def replace(self, pieces: list[str], t_ns: int | None = None, blocks_done: int | None = None) -> Snapshot:
        """A whole new draft; positions whose piece changed, or that the draft dropped, are revised."""
        old = self.pieces
        revised = [i for i in range(min(len(old), len(pieces))) if old[i] != pieces[i]]
        revised += range(len(pieces), len(old))
        self.pieces = list(pieces)
        self.revisions += len(revised)
        if blocks_done is not None:
            self.blocks_done = min(blocks_done, len(pieces))
        return self._snapshot(tuple(revised), t_ns)

    def finish(self, t_ns: int | None = None) -> Snapshot:
        """The answer is complete: an EOS position closes it, every position is final."""
        self.blocks_done = len(self.pieces) + 1
        return self._snapshot((), t_ns, done=True)

    def _snapshot(self, revised: tuple[int, ...], t_ns: int | None, done: bool = False) -> Snapshot:
        pieces = tuple(self.pieces) + (("",) if done else ())
        tokens = tuple(self._id(p) for p in self.pieces) + ((EOS_ID,) if done else ())
        n = len(tokens)
        snap = Snapshot(step=self.steps, t_ns=time.monotonic_ns() if t_ns is None else t_ns, tokens=tokens,
                        masked=(False,) * n, confidence=(1.0,) * n, guesses=tokens, pieces=pieces,
                        eos=len(self.pieces) if done else None, block_size=self.block_size,
                        blocks_done=min(self.blocks_done, n), pinned=min(self.pinned, n), forwards=self.steps + 1,
                        done=done, revised=revised)
        self.steps += 1
        return snap
