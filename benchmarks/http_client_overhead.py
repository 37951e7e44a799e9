"""Client overhead per streamed chunk of the HTTP engines (target: <= 1 ms).

Two figures:
1. live: a real stream from the loopback mock (an AR profile, one delta per token); the engine's own
   count of the time it spends turning each received SSE line into snapshots;
2. replay: the same captured SSE lines fed from memory through the client's per-line path, including
   its interruptible read (`_wait`: one task per line), with no network and no server in the process.

    .venv/bin/python benchmarks/http_client_overhead.py [--lines-per-prompt 11] [--repeat 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import httpx
import torch

from engines.eval.probe import DEFAULT_PROMPTS
from engines.hosted.mercury import MercuryEngine
from engines.hosted.openai_stream import OpenAIStreamEngine
from engines.simulated.mock_server import start_mock


async def _replay(engine: OpenAIStreamEngine, lines: list[str]) -> float:
    """Seconds per line for the client's read-and-parse path over lines held in memory."""
    gen = engine.generate(DEFAULT_PROMPTS[0])

    async def source():
        for ln in lines:
            yield ln

    it = source()
    t0 = time.perf_counter()
    n = 0
    while (line := await gen._wait(anext(it, None), 5.0, "replay")) is not None:
        gen._on_line(line, time.monotonic_ns())
        n += 1
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    torch.set_num_threads(1)
    out: dict[str, object] = {}
    with start_mock(seed=0) as mock:
        for label, eng in [("openai, AR profile gpt-oss-20b", OpenAIStreamEngine("gpt-oss-20b", base_url=mock.url)),
                           ("mercury diffusing, celeris-1",
                            MercuryEngine("celeris-1", base_url=mock.url, diffusing=True))]:
            gen = eng.generate(DEFAULT_PROMPTS[0])
            snaps = list(gen)
            body = gen.body
            with httpx.stream("POST", eng.url, json=body, timeout=30) as r:
                lines = list(r.iter_lines())
            replay = [asyncio.run(_replay(eng, lines)) for _ in range(a.repeat)]
            out[label] = {"lines": gen.lines, "snapshots": len(snaps),
                          "live_us_per_line": round(gen.overhead_ns / gen.lines / 1e3, 1),
                          "replay_us_per_line_median": round(statistics.median(replay) * 1e6, 1),
                          "replay_us_per_line_max": round(max(replay) * 1e6, 1)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
