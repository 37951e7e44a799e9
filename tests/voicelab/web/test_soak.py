"""Connect / disconnect soak of the live demo: 100 sessions of the real voicelab pipeline,
each opened by an aiortc client as the page opens one (audio track, data channel, offer, wait for "ready"),
then ended the three ways a page ends one (pc.close() alone, the Stop button's bye, the pagehide beacon),
must leave no session, no asyncio task and no thread behind, and grow the process's memory (RSS) by at most
10 % over its level after a few warm-up sessions.

The client runs in the test's process beside the server, so the RSS figure bounds the server's growth from
above. VOICELAB_SOAK_CYCLES changes the count (default 100). Needs a trained tiny engine, as the browser test.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.voicelab.web.test_app import Client
from tests.voicelab.web.test_browser import _engine
from tests.web_helpers import ServerThread

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
WARM_UP = 5
MAX_RSS_GROWTH = 0.10


def session_threads() -> dict[str, int]:
    """Live threads by name (digits dropped), without the event loop's default executor ("asyncio_N"): that
    pool is bounded (min(32, cpus + 4) threads), shared by all sessions and keeps its idle workers."""
    out: dict[str, int] = {}
    for t in threading.enumerate():
        name = re.sub(r"[_-]?\d+(_\d+)?$", "", t.name) or t.name
        if not t.name.startswith("asyncio_"):
            out[name] = out.get(name, 0) + 1
    return out


def rss_bytes() -> int:
    """This process's resident set size, from /proc."""
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    engine = _engine()
    if engine is None:
        pytest.skip("needs a trained tiny engine in engines/tiny (voicelab train) or VOICELAB_TEST_ENGINE")
    from voicelab.cli.common import quiet_pipecat_logs
    from voicelab.pipeline.config import PipelineConfig
    from voicelab.pipeline.resources import ResourcePool
    from voicelab.web.app import create_app
    from voicelab.web.options import ServeOptions

    quiet_pipecat_logs("ERROR")
    cfg = PipelineConfig(engine=engine)
    pool = ResourcePool()
    pool.preload(cfg)
    opts = ServeOptions(pipeline=cfg, max_sessions=2, runs_dir=tmp_path_factory.mktemp("live-runs"))
    with ServerThread(create_app(opts, pool=pool)) as server:
        yield server
    pool.close()


async def _cycle(server: ServerThread, i: int) -> None:
    """One page: connect, wait until the pipeline says ready, then leave (three ways, in turn)."""
    c = Client(server)
    status, data = await c.offer()
    assert status == 200, (i, data)
    await c.wait_ready()
    way = i % 3
    if way == 1:  # the Stop button: bye over the data channel, then pc.close()
        c.channel.send(json.dumps({"type": "bye"}))
    elif way == 2:  # the tab goes: the pagehide beacon, then pc.close()
        code, _ = await asyncio.to_thread(server.json, "POST", "/api/session/close", {"pc_id": c.pc_id})
        assert code == 200
    await c.close()  # way 0: pc.close() alone, the server sees the connection go
    st = await asyncio.to_thread(server.wait_sessions, 0, 20.0)
    assert st["sessions"] == 0 and st["connecting"] == 0, (i, st)


async def _settle(server: ServerThread, tasks: int, threads: int, timeout_s: float = 20.0) -> dict[str, Any]:
    """Wait until the server's task count and the process's thread count are back to (or below) these."""
    deadline = time.monotonic() + timeout_s
    while True:
        gc.collect()  # an executor's idle workers exit once it is collected: garbage is not a leak
        st = await asyncio.to_thread(server.status)
        n_threads = sum(session_threads().values())
        if (st["tasks"] <= tasks and n_threads <= threads) or time.monotonic() > deadline:
            return {**st, "threads": n_threads}
        await asyncio.sleep(0.2)


async def test_connect_disconnect_cycles_leave_nothing_behind(served: ServerThread) -> None:
    cycles = int(os.environ.get("VOICELAB_SOAK_CYCLES", "100"))
    for i in range(WARM_UP):  # first sessions load models and grow the allocators: not a leak
        await _cycle(served, i)
    await asyncio.sleep(1.0)
    gc.collect()
    idle = await asyncio.to_thread(served.status)
    base = {"tasks": idle["tasks"], "threads": sum(session_threads().values()), "rss": rss_bytes(),
            "loadavg": os.getloadavg(), "thread_names": session_threads()}
    rss_trace = []
    t0 = time.monotonic()
    for i in range(cycles):
        await _cycle(served, i)
        if (i + 1) % 10 == 0:
            rss_trace.append(round(rss_bytes() / 2**20, 1))
    wall = time.monotonic() - t0
    end = await _settle(served, base["tasks"], base["threads"])
    gc.collect()
    rss = rss_bytes()
    growth = rss / base["rss"] - 1.0
    record = {"cycles": cycles, "wall_s": round(wall, 1), "s_per_cycle": round(wall / max(cycles, 1), 2),
              "tasks_before": base["tasks"], "tasks_after": end["tasks"],
              "threads_before": base["threads"], "threads_after": end["threads"],
              "rss_mb_before": round(base["rss"] / 2**20, 1), "rss_mb_after": round(rss / 2**20, 1),
              "rss_growth_pct": round(100 * growth, 2), "rss_mb_every_10": rss_trace,
              "threads_by_name_before": base["thread_names"], "threads_by_name_after": session_threads(), "loadavg_before": [round(x, 2) for x in base["loadavg"]],
              "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    print("soak:", json.dumps(record))
    assert end["sessions"] == 0 and end["connecting"] == 0, record
    assert end["tasks"] <= base["tasks"], record
    assert end["threads"] <= base["threads"], record
    assert growth <= MAX_RSS_GROWTH, record
