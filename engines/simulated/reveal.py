"""When each part of an answer becomes visible under a timing profile: the schedule both the in-process
profile engine and the mock server play.

Timing: the first text appears at `first_answer_s`; the last of N tokens at
`first_answer_s + (N - 1) / tokens_per_s`, so the output speed measured as (N - 1) / (t_last - t_first)
is the profile's. Autoregressive profiles reveal one token per step; jitter spreads the gaps (seeded)
and is renormalised so the total, and so the speed, stays exact. Diffusion profiles reveal blocks:
each block is drafted `steps_per_block` times, wrong at first at a seeded choice of positions, and
exact at its last draft (the positions that change are revisions).

Plain Python, no torch.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from engines.simulated.profiles import Profile


@dataclass(frozen=True, slots=True)
class Reveal:
    t_s: float  # since the request
    pieces: tuple[str, ...]  # the whole visible draft at that time
    final: int  # leading pieces that are final (never change again)


def reveal_schedule(pieces: list[str], profile: Profile, seed: int = 0, jitter: float = 0.2,
                    block_size: int = 32, steps_per_block: int = 4) -> list[Reveal]:
    """The drafts of one answer (its token pieces) and their times; the last reveal is the whole answer."""
    n = len(pieces)
    if n == 0:
        return [Reveal(profile.first_answer_s, (), 0)]
    rng = random.Random(seed)
    gap = 1.0 / profile.tokens_per_s
    t_first = profile.first_answer_s
    if profile.kind != "diffusion":
        gaps = [max(0.1, 1.0 + jitter * rng.gauss(0.0, 1.0)) for _ in range(n - 1)]
        scale = (n - 1) / sum(gaps) if gaps else 1.0
        out, t = [], t_first
        for i in range(n):
            if i:
                t += gaps[i - 1] * scale * gap
            out.append(Reveal(t, tuple(pieces[:i + 1]), i + 1))
        return out
    out = []
    steps = max(1, steps_per_block)
    start = t_first
    for b0 in range(0, n, block_size):
        b1 = min(n, b0 + block_size)
        end = t_first + (b1 - 1) * gap
        order = list(range(b0, b1))
        rng.shuffle(order)  # the order in which this block's positions settle
        for s in range(steps):
            # the first block's first draft is the first answer; later blocks start after the previous one
            frac = s / (steps - 1) if b0 == 0 and steps > 1 else (s + 1) / steps
            t = start + frac * (end - start)
            right = set(order[:round(len(order) * (s + 1) / steps)])
            draft = list(pieces[:b1])
            for p in range(b0, b1):
                if p not in right:
                    draft[p] = _noise(pieces, p, rng)
            out.append(Reveal(t, tuple(draft), b1 if s == steps - 1 else b0))
        start = end
    return out


def _noise(pieces: list[str], p: int, rng: random.Random) -> str:
    """A wrong guess for position p: another piece of the same answer, as a denoiser's early guess is."""
    others = [q for q in pieces if q != pieces[p]]
    return rng.choice(others) if others else pieces[p] + pieces[p]
