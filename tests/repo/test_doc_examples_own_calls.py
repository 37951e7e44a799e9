"""README's one short run (`--json`), its report and compare, and the own calls made from its recording:
docs/own-calls.md's imports, checks and benches (docs/turn-bench.md), and their play. The run folders and imports
are made once per module (`base`, `own`), so these tests share one file and one xdist worker."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.repo.test_doc_examples import (  # noqa: F401 - the autouse fixture stops what a test started
    FIXTURES,
    ROOT,
    T_ONE,
    T_OWN,
    T_SLOW_PLAY,
    TIMEOUT_S,
    Job,
    _stop_what_the_test_started,
    all_ran,
    env,
    run,
    run_folders,
    workdir,
)

# ---- the shared short run -------------------------------------------------------------------------------------

@dataclass
class Base:
    work: Path  # holds runs/RUN, runs/A, runs/B
    run: Path  # the README's --json run of single_question
    wav: Path  # its stereo recording (left caller, right bot)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    """README's `--json` run and docs/engine-profiles.md's one-fixture matrix, side by side: the run folders
    the other examples read."""
    work = workdir(tmp_path_factory.mktemp("one_call"))
    mwork = workdir(tmp_path_factory.mktemp("profile_matrix"))
    one = Job("voicelab run single_question --stt transcript --json", work)
    matrix = Job("voicelab run single_question --stt transcript --matrix profiles:celeris-1", mwork)
    assert json.loads(one.finish())["far_ms"]["n"] == 1  # --json: the summary on stdout
    matrix.finish()
    (run,) = run_folders(work / "runs")
    pinned = [r for r in run_folders(mwork / "runs") if "final" not in r.name]
    assert len(run_folders(mwork / "runs")) == 2 and len(pinned) == 1, run_folders(mwork / "runs")
    assert list((mwork / "runs").glob("*-matrix/matrix.json"))
    for name, target in (("RUN", run), ("A", run), ("B", pinned[0])):
        (work / "runs" / name).symlink_to(target)
    (wav,) = (run / "calls").glob("*.wav")
    return Base(work, run, wav)


@pytest.mark.slow
def test_one_call_report_compare_and_a_profile_matrix(base: Base) -> None:
    report = Job("voicelab report runs/RUN", base.work)
    compare = Job("voicelab compare runs/A runs/B --fail-on far_p95:+50ms", base.work)
    report.finish()
    assert (base.run / "report.html").stat().st_size > 10_000
    out = compare.finish(ok=(0, 1, 3))  # 3: one turn a side is too few to decide the gate, as documented
    assert "far" in out.lower()
    all_ran(T_ONE)


def _write_live_session(wav: Path, folder: Path) -> None:
    """A live session's run folder as `voicelab serve` writes it (LiveRecording), from a recorded call."""
    script = """
import asyncio, sys
from pathlib import Path
import soundfile as sf
from voicelab.measure.calllog import CallLog
from voicelab.measure.recording import Track
from voicelab.pipeline.config import PipelineConfig
from voicelab.runs.folder import RunFolder
from voicelab.pipeline.transport.mic_recorder import MicRecorder
from voicelab.web.recording import LiveRecording
x, sr = sf.read(sys.argv[1], dtype="int16")  # left: caller, right: bot
rec = LiveRecording(RunFolder.create(Path(sys.argv[2])), PipelineConfig(engine="diffusion"), "pc1")
log = CallLog("pc1", writer=rec.writer)
mic = MicRecorder(log, sr)
for i in range(0, len(x), 320):  # 20 ms frames, each arriving when it ends
    mic.put(x[i:i + 320, 0].copy(), sr, 1, round((i + 320) / sr * 1e9))
bot = Track(sr)
bot.put(0, x[:, 1].copy())
asyncio.run(rec.close(log, mic, bot, "doc example"))
"""
    subprocess.run([sys.executable, "-c", script, str(wav), str(folder)], check=True, timeout=TIMEOUT_S,
                   cwd=ROOT, env=env())


def _strategy_code() -> str:
    page = (ROOT / "docs" / "turn-bench.md").read_text(encoding="utf-8")
    m = re.search(r"```python\n(.*?class MyStrategy.*?)```", page, re.S)
    assert m, "docs/turn-bench.md: no ```python block with class MyStrategy"
    return m.group(1)


def _import_own_calls(base: Base, own: Path) -> None:
    """docs/own-calls.md's three sources, made real in `own`, imported into my_calls in the page's order (the
    first into an empty my_calls: a folder already holding fixtures is refused)."""
    import soundfile as sf

    (own / "calls").mkdir()
    shutil.copy(base.wav, own / "calls" / base.wav.name)
    _write_live_session(base.wav, own / "runs" / "live" / "20261202-101500-live-pc1")
    x, sr = sf.read(base.wav, dtype="int16")
    sf.write(own / "support.flac", x[:, ::-1], sr)  # the caller on the right
    for cmd in (".venv/bin/voicelab fixtures import calls/*.wav --out my_calls",
                ".venv/bin/voicelab fixtures import runs/live/20261202-101500-live-pc1 --out my_calls/live "
                "--name live",
                ".venv/bin/voicelab fixtures import support.flac --out my_calls/support --caller-channel right "
                "--expect-fallback"):
        run(cmd, own)
    assert len(list((own / "my_calls").rglob("fixture.json"))) == 3
    # the page's transcripts with checks: one line per turn the support.flac import found
    turns = json.loads((own / "my_calls" / "support" / "support" / "fixture.json").read_text(encoding="utf-8"))["turns"]
    (own / "expects.txt").write_text("".join(f"{t['text'] or 'mm'}\t{json.dumps({'says_any': ['open', 'you']})}\n"
                                             for t in turns), encoding="utf-8")
    run(".venv/bin/voicelab fixtures import support.flac --out checked_calls --caller-channel right --text "
        "expects.txt", own)
    assert "1 of 1 fixtures pass" in run(".venv/bin/voicelab fixtures check checked_calls", own)
    checked = json.loads(next((own / "checked_calls").rglob("fixture.json")).read_text(encoding="utf-8"))
    assert all(t["expect_reply"] == {"says_any": ["open", "you"]} for t in checked["turns"])


@pytest.fixture(scope="module")
def own(base: Base, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/own-calls.md's three imports, made once: the bench test reads them and the slow test plays them."""
    folder = workdir(tmp_path_factory.mktemp("own"))
    _import_own_calls(base, folder)
    return folder


@pytest.mark.slow
def test_own_calls_imported_checked_and_benched(base: Base, own: Path, tmp_path: Path) -> None:
    # README: one recording imported, checked where fixtures live, benched; beside the own-calls page's steps
    readme = workdir(tmp_path / "readme")
    shutil.copy(base.wav, readme / "call.wav")
    r_import = Job("voicelab fixtures import call.wav --out my_calls", readme)
    listed = Job(".venv/bin/voicelab fixtures list my_calls", own)
    checked = Job(".venv/bin/voicelab fixtures check my_calls", own)
    # docs/turn-bench.md: the first import as my_call/, a bundled real recording as other_call/, the page's
    # own strategy as mypkg/turns.py
    (first,) = (own / "my_calls").glob("*/fixture.json")
    shutil.copytree(first.parent, own / "my_call")
    shutil.copytree(FIXTURES / "hr_question_close", own / "other_call")
    (own / "mypkg").mkdir()
    (own / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    (own / "mypkg" / "turns.py").write_text(_strategy_code(), encoding="utf-8")
    bench1 = Job("voicelab bench turns --fixtures my_call/ --fixtures other_call/", own)
    assert len(listed.finish().strip().splitlines()) >= 3
    assert "3 of 3 fixtures pass" in checked.finish()
    bench1.finish()  # fills the score cache for my_call/: the next two replay it
    bench2 = Job("voicelab bench turns --fixtures my_call/ --json --out benchmarks/results/turn_bench", own)
    bench3 = Job("voicelab bench turns --fixtures my_call/ --strategy mypkg.turns:mine", own,
                 extra_env={"PYTHONPATH": str(own)})
    summary = json.loads(bench2.finish())
    assert {s["strategy"] for s in summary} >= {"timeout", "smart"}
    assert (own / "benchmarks" / "results" / "turn_bench" / "turn_bench.json").is_file()
    assert "mine" in bench3.finish()

    r_import.finish()
    assert (readme / "my_calls" / "call" / "fixture.json").is_file()
    shutil.copytree(readme / "my_calls" / "call", readme / "audio_fixtures" / "my_call")
    r_check = Job("voicelab fixtures check audio_fixtures/my_call", readme)
    r_bench = Job("voicelab bench turns --fixtures my_calls/call", readme)
    assert "1 of 1 fixtures pass" in r_check.finish()
    r_bench.finish()
    all_ran(T_OWN)


@pytest.mark.slow
def test_slow_own_calls_played(own: Path) -> None:
    run(".venv/bin/voicelab run my_calls", own)  # the three imports of the module's `own` folder
    (played,) = [r for r in run_folders(own / "runs") if "live" not in r.relative_to(own).parts]
    assert len(list((played / "calls").glob("*.wav"))) == 3
    all_ran(T_SLOW_PLAY)
