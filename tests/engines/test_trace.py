"""Trace record and replay keep snapshots and their timing; the GPU script runs on a tiny shape."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from engines.local.checkpoint import load
from engines.local.engine import Engine
from engines.local.samplers import SamplerConfig
from engines.trace import ReplayEngine, TraceError, record
from tests.virtual_loop import VirtualLoop

MSGS = [{"role": "user", "content": "where are you located"}]


def test_record_and_replay_with_timing(tiny_diffusion: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    eng = Engine(load(tiny_diffusion), "threshold", SamplerConfig(canvas=16, block_size=4, threshold=0.99))
    path = tmp_path / "t.jsonl"
    record(eng, [MSGS], path)
    rep = ReplayEngine(path)
    assert rep.sampler == "threshold"
    orig = rep.generations[0].snapshots
    assert len(orig) >= 2

    # the replay on a virtual clock (the turn tests' loop): its waits are its own schedule, not how late this
    # machine's timers wake (a real-time "not 50 ms late" failed when both cores were busy)
    loop = VirtualLoop()
    import engines.trace as trace_module
    monkeypatch.setattr(trace_module, "time", SimpleNamespace(monotonic_ns=lambda: round(loop.time() * 1e9),
                                                              sleep=time.sleep))

    async def play() -> list[tuple[int, object]]:
        out = []
        t0 = round(loop.time() * 1e9)
        async for s in rep.generate(MSGS):
            out.append((round(loop.time() * 1e9) - t0, s))
        return out

    try:
        got = loop.run_until_complete(play())
    finally:
        loop.close()
    assert [s.tokens for _, s in got] == [s.tokens for _, s in orig]
    for (dt, _), (odt, _) in zip(got, orig, strict=True):
        assert abs(dt - odt) <= 1_000  # each snapshot at its recorded time since the start (to rounding)


def test_replay_cancel_and_pin(tiny_diffusion: Path, tmp_path: Path) -> None:
    eng = Engine(load(tiny_diffusion), "threshold", SamplerConfig(canvas=16, block_size=4, threshold=0.99))
    path = tmp_path / "t.jsonl"
    record(eng, [MSGS, [{"role": "user", "content": "bye"}]], path)
    rep = ReplayEngine(path)
    gen = rep.generate([{"role": "user", "content": "bye"}])
    assert gen.rec.messages[-1]["content"] == "bye"
    it = iter(gen)
    next(it)
    gen.pin(3)
    s = next(it)
    assert s.pinned >= 3
    gen.cancel()
    assert list(it) == []


def test_malformed_trace(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text('{"type": "header", "engine": "x", "sampler": "y"}\n{"type": "snapshot"}\n')
    with pytest.raises(TraceError, match=r"bad.jsonl:2"):
        ReplayEngine(p)
    with pytest.raises(TraceError, match="not found"):
        ReplayEngine(tmp_path / "none.jsonl")


def test_gpu_script_runs_on_a_tiny_shape_on_the_cpu(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gls", Path(__file__).parents[2] / "benchmarks/gpu_llada_shape.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "r.json"
    res = mod.main(["--shape", "tiny", "--repeats", "3", "--prompt", "16", "--gen", "16", "--block", "4",
                    "--device", "cpu", "--out", str(out)])
    assert out.exists()
    assert res["step_ms_no_cache"] > 0 and res["step_ms_block_cache"] > 0 and res["bandwidth_floor_ms"] > 0
    assert res["weight_bytes"] == res["params"] * 4
