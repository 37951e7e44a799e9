"""The README's recogniser bench on the user's own speech and docs/turn-bench.md's human group: CPU-bound benches
(no real-time audio, no run folder of another test), in their own module so that an xdist worker runs them
beside the real-time examples of the other files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.repo.test_doc_examples import (  # noqa: F401 - the autouse fixture stops what a test started
    HUMAN_SPEECH,
    T_BENCH,
    Job,
    _stop_what_the_test_started,
    all_ran,
    workdir,
)


@pytest.mark.slow
def test_benches_on_own_speech_and_the_human_group(tmp_path: Path) -> None:
    readme = workdir(tmp_path / "readme")
    # README: recognisers ranked on the user's own speech; docs/turn-bench.md: the human group alone
    speech = readme / "my_speech"
    speech.mkdir()
    lines = (HUMAN_SPEECH / "transcripts.tsv").read_text(encoding="utf-8").splitlines()
    picked = [ln for ln in lines if ln.startswith(("2414-128291-0000\t", "p225_003\t"))]
    for ln in picked:
        stem = ln.split("\t")[0]
        (src,) = HUMAN_SPEECH.rglob(f"{stem}.flac")
        shutil.copy(src, speech / src.name)
    (speech / "transcripts.tsv").write_text("\n".join(picked) + "\n", encoding="utf-8")
    stt_job = Job("voicelab bench stt --data my_speech --json", readme)
    human_job = Job("voicelab bench turns --group human --json", readme)
    stt = json.loads(stt_job.finish())
    assert {r["suite"] for r in stt} >= {"my_speech"} and any(r["default"] for r in stt)
    assert {r["group"] for r in json.loads(human_job.finish())} == {"human"}
    all_ran(T_BENCH)
