"""How many threads one process's models compute with: `VOICELAB_CPU_THREADS`, read in this one place.

The recognisers (Whisper on CTranslate2, Moonshine on onnxruntime: two threads each), the Piper voice
(onnxruntime: a thread per core) and the torch engines (a thread per core) each keep a pool of threads for their
matrix work; Silero and smart-turn already run on one. That is right for one call on an idle machine. When
several processes share the cores (a test suite with a worker per core, calls side by side, a bench beside a run)
the pools of different processes wait for each other: CTranslate2's OpenMP threads and onnxruntime's workers spin
while they wait, so the same work takes more CPU. `VOICELAB_CPU_THREADS=1` gives each process one thread, and the
processes share the cores through the operating system instead.

Plain Python: the recogniser layer and the pipeline read it; nothing here imports a model library.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ENV = "VOICELAB_CPU_THREADS"
DEFAULT = 2  # the recognisers' pools, as every figure so far was measured (the voice and torch: their own)


class CpuThreadsError(ValueError):
    """`VOICELAB_CPU_THREADS` is set to something other than a whole number from 1 up."""


def configured_threads(environ: Mapping[str, str] | None = None) -> int | None:
    """`VOICELAB_CPU_THREADS` as a number, or None when it is not set (each library keeps its own default)."""
    raw = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise CpuThreadsError(f"{ENV}={raw!r}: not a whole number of threads from 1 up")
    return n


def cpu_threads(environ: Mapping[str, str] | None = None) -> int:
    """The thread count for a recogniser's pool: `VOICELAB_CPU_THREADS` when set, else 2."""
    n = configured_threads(environ)
    return DEFAULT if n is None else n
