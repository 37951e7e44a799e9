"""`voicelab bench turns` through a throwaway typer app: its options, its JSON and its output folder.

The default test feeds the command made-up scores (no model runs); the slow one benches two bundled fixtures
for real (their scores cached under a temporary folder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from voicelab.cli.bench_turns import bench_turns
from voicelab.turnbench import turn_bench as bench
from voicelab.turnbench.replay import WINDOW_S, vad_events

ROOT = Path(__file__).resolve().parents[3]


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(bench_turns)

    @app.command("other")
    def other() -> None:  # a second command keeps `bench_turns` a named subcommand, as under `voicelab bench`
        pass

    return app


def _turn_doc(i: int, audio_p: float, text_p: float, pause_s: float) -> dict[str, Any]:
    n = int(9 / WINDOW_S)
    conf = np.zeros(n, np.float32)
    a, b = int(0.5 / WINDOW_S), int(2.0 / WINDOW_S)
    c = b + int(pause_s / WINDOW_S)
    conf[a:b] = 0.9
    conf[c:c + int(1 / WINDOW_S)] = 0.9
    ev = vad_events(conf >= 0.7)
    stops = [{"t_s": e.t_s, "first_silent_s": e.first_silent_s, "audio_p": audio_p, "smart_ms": 60.0,
              "text": f"w{j}", "text_p": text_p, "stt_ms": 150.0, "decision_ms": 5.0, "reliable": True,
              "early_text": f"w{j}", "early_text_p": text_p, "early_stt_ms": 150.0}
             for j, e in enumerate(x for x in ev if x.kind == "stop")]
    return {"id": f"g{i}", "group": "generated", "kind": "turn", "duration_s": 9.0,
            "meta": {"kind": "complete" if i % 2 else "content"},
            "conf": conf, "vol": np.ones(n), "starts": [e.t_s for e in ev if e.kind == "start"], "stops": stops,
            # `--turn listen`'s scores after each stop: rising through the silence from the stop's own P
            "listen": [np.clip(audio_p + 0.03 * np.arange(29), 0, 1).astype(np.float32) for _ in stops],
            "points": [{"kind": "pause", "t_s": b * WINDOW_S, "resume_s": c * WINDOW_S},
                       {"kind": "end", "t_s": (c + int(1 / WINDOW_S)) * WINDOW_S, "resume_s": None}]}


def _fake_docs(*_: Any, **__: Any) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    return [_turn_doc(i, float(rng.random()), float(rng.random()), float(rng.uniform(0.2, 2.5)))
            for i in range(40)]


@pytest.mark.slow
def test_bench_turns_json_and_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bench, "load_scores", _fake_docs)
    monkeypatch.setattr(bench, "bundled_refs", lambda: [])
    monkeypatch.setattr(bench, "generated_refs", lambda limit=None: [])
    res = CliRunner().invoke(_app(), ["bench-turns", "--json", "--resamples", "50", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["strategy"] for r in rows] == ["timeout", "smart", "decide", "decide+early", "fuse", "listen"]
    for r in rows:
        assert r["cases"] == 80 and r["pauses"] == 40 and r["ends"] == 40
        assert set(r["dead_air_p50_ms_at"]) == set(r["dead_air_p95_ms_at"]) == {"1%", "2%", "5%", "10%"}
        assert set(r["false_cutoffs_at"]) == {"300ms", "500ms", "800ms"}
        assert all(v is None or v >= 0 for v in r["dead_air_p50_ms_at"].values())
    doc = json.loads((tmp_path / "turn_bench.json").read_text())
    assert doc["summary"] == rows and (tmp_path / "turn_bench.png").stat().st_size > 10_000
    # the words ceiling beside them: half the pauses follow a complete sentence
    ceiling = doc["words_ceiling"]
    assert ceiling["pauses"] == 40 and ceiling["complete_prefix_pauses"] == 20
    assert ceiling["false_cutoffs_at"]["300ms"] <= 0.5


def test_bench_turns_refuses_bad_options() -> None:
    res = CliRunner().invoke(_app(), ["bench-turns", "--limit", "0"])
    assert res.exit_code == 2 and "--limit" in res.output
    res = CliRunner().invoke(_app(), ["bench-turns", "--strategy", "nomodule", "--fixtures", "x"])
    assert res.exit_code == 2 and "MODULE:ATTRIBUTE" in res.output


@pytest.mark.slow
def test_bench_turns_on_a_users_fixtures(tmp_path: Path) -> None:
    fx = [str(ROOT / "audio_fixtures" / n) for n in ("mid_sentence_pause", "hr_long_jfk")]
    res = CliRunner().invoke(_app(), ["bench-turns", "--json", "--resamples", "0", "--cache", str(tmp_path),
                                      *(a for f in fx for a in ("--fixtures", f))])
    assert res.exit_code == 0, res.output
    rows = {r["strategy"]: r for r in json.loads(res.stdout)}
    decide = rows["decide"]["at_default"]
    assert decide["pauses"] == 5 and decide["false_cutoffs"] == 0  # the JFK caller's pauses are waited out


def test_bench_turns_plot_two_curves(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`--plot x.png --curve timeout --curve decide`: those two curves, their 5 % points, the words ceiling,
    eot-bench's anchors marked as another dataset; an unknown curve or suffix is a one-line error."""
    from voicelab.turnbench.anchors import EOT_BENCH_AT_5

    rng = np.random.default_rng(1)
    docs = [_turn_doc(i, float(rng.random()), float(rng.random()), float(rng.uniform(0.2, 2.5))) for i in range(12)]
    monkeypatch.setattr(bench, "load_scores", lambda *_, **__: docs)
    monkeypatch.setattr(bench, "bundled_refs", lambda: [])
    monkeypatch.setattr(bench, "generated_refs", lambda limit=None, barge=True: ["scores faked"])
    results: list[dict[str, Any]] = []
    run_bench = bench.run_bench
    monkeypatch.setattr(bench, "run_bench", lambda *a, **k: results.append(run_bench(*a, **k)) or results[-1])
    png = tmp_path / "x.png"
    res = CliRunner().invoke(_app(), ["bench-turns", "--group", "generated", "--resamples", "0",
                                      "--plot", str(png), "--curve", "timeout", "--curve", "decide"])
    assert res.exit_code == 0, res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000

    result = results[0]
    labels = bench.plot_curves(result, tmp_path / "x.svg", ["timeout", "decide"])
    assert (tmp_path / "x.svg").stat().st_size > 0
    curves = [lb for lb in labels if lb.endswith("swept)")]
    assert [c.split(" (")[0] for c in curves] == ["timeout", "decide"]
    for name in ("timeout", "decide"):  # each curve's point at 5 %, the figure the bench reports
        at5 = next(e for e in result["strategies"] if e["strategy"] == name)["groups"]["generated"][
            "passes_removed"]["dead_air_p50_ms_at"]["5%"]
        assert f"{name} at 5 %: {bench.fmt_ms(at5)} ms" in labels or f"{name}: no setting reaches 5 %" in labels
    assert not any(lb.startswith(("smart", "decide+early")) for lb in labels)
    assert [lb.split(": ")[1].split(",")[0] for lb in labels if lb.startswith("eot-bench: ")] == [
        "LiveKit turn detector v1", "Baton", "Soniox", "smart-turn v3.2", "Deepgram Flux", "silence-only"]
    assert [a.dead_air_ms for a in EOT_BENCH_AT_5] == [543, 577, 647, 1051, 1151, 1600]
    assert any("another dataset" in lb and "not a comparison" in lb for lb in labels)
    assert any(lb.startswith("words ceiling (") for lb in labels)
    no_ceiling = bench.plot_curves({**result, "words_ceiling": None}, tmp_path / "y.png", ["decide"])
    assert "words ceiling: not computed for generated (generated corpus only)" in no_ceiling

    for args, what in ((["--curve", "nope"], "--curve 'nope'"), (["--curve", "decide"], None)):
        plot = ["--plot", str(tmp_path / ("z.png" if what else "z.pdf"))]
        res = CliRunner().invoke(_app(), ["bench-turns", "--group", "generated", *plot, *args])
        assert res.exit_code == 2
        assert res.output.count("\n") == 1 and res.output.startswith("error: ")
        assert (what or "--plot") in res.output
