"""examples/ci/: the workflow runs voice_agent_check.sh after the set-up and uploads its JUnit files; the committed
baseline is a run folder compare can read, made by the same calls; and the script, run here as the workflow runs
it, writes a call.xml with one test case per expectation check and a compare.xml with one per gate."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.voicelab.call.test_helpers import free_port
from voicelab.analysis import load_run
from voicelab.analysis.compare import parse_fail_on
from voicelab.cli.call import failed_calls

ROOT = Path(__file__).resolve().parents[3]
CI = ROOT / "examples" / "ci"
SCRIPT = CI / "voice_agent_check.sh"


def _default(name: str) -> str:
    """A setting's default in the script (`NAME=${NAME:-value}`)."""
    m = re.search(rf"^{name}=\$\{{{name}:-([^}}]*)\}}", SCRIPT.read_text(encoding="utf-8"), re.M)
    assert m, f"{SCRIPT.name}: no default for {name}"
    return m.group(1)


def test_the_workflow_sets_up_runs_the_script_and_uploads_the_junit_files() -> None:
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((CI / "voice-agent.yml").read_text(encoding="utf-8"))
    (job,) = flow["jobs"].values()
    runs = [s.get("run", "") for s in job["steps"]]
    assert runs.index("bash scripts/setup.sh") < runs.index("bash examples/ci/voice_agent_check.sh")
    check = job["steps"][runs.index("bash examples/ci/voice_agent_check.sh")]
    out = check["env"]["OUT"]
    (upload,) = [s for s in job["steps"] if "upload-artifact" in s.get("uses", "") and "results" in s["with"]["name"]]
    assert upload["if"] == "always()"  # a failed gate still hands its JUnit files over
    paths = upload["with"]["path"].split()
    assert f"{out}/call.xml" in paths and f"{out}/compare.xml" in paths


def test_the_baseline_is_the_scripts_own_calls_readable_by_compare() -> None:
    base = load_run(CI / "baseline")
    assert base.config["kind"] == "call"  # made by `voicelab call`, as the job's run
    assert int(base.config["repeat"]) == int(_default("REPEAT"))  # same plays: paired turns
    assert [f["name"] for f in base.config["fixtures"]] == ["echo_hours"]
    assert "examples/ci/fixtures" in base.config["command"]
    assert not list((CI / "baseline").rglob("*.wav"))  # the tables, not the recordings
    assert len(base.turns) == 3 * int(_default("REPEAT"))
    assert parse_fail_on(_default("FAIL_ON"))  # the gate as the script writes it


@pytest.mark.slow
def test_the_scripts_steps_write_a_case_per_expectation_and_per_gate(tmp_path: Path) -> None:
    """The workflow's step on this machine, with two plays instead of six (a minute of calls, not three): the
    gate may well be undecided with so few turns (exit 3), and a loaded machine's agent may miss a check (1)."""
    out = tmp_path / "ci-out"
    env = {**os.environ, "OUT": str(out), "PORT": str(free_port()), "REPEAT": "2"}
    proc = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1, 3), proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = [p.parent for p in (out / "runs").rglob("summary.json")]
    answers = json.loads((run / "summary.json").read_text(encoding="utf-8"))["answers"]
    root = ET.parse(out / "call.xml").getroot()
    cases = root.findall("testsuite/testcase")
    calls_failed = failed_calls(run)
    assert answers["expectations"] == 2 * 9  # two plays of three turns, three checks each
    assert len(cases) == answers["expectations"] + len(calls_failed) == int(root.get("tests", "-1"))
    assert len(root.findall("testsuite/testcase/failure")) == answers["expectations"] - answers["expectations_passed"]
    assert {c.get("name") for c in cases} <= {f"turn {t} {k}" for t in range(3)
                                              for k in ("says_all", "says_any", "matches", "not_says")} | {"call"}
    (gate,) = ET.parse(out / "compare.xml").getroot().findall("testsuite/testcase")
    assert gate.get("name") == "far_p50 +200ms"
    undecided = gate.find("error") is not None
    assert (proc.returncode == 3) == (undecided and not answers["expectations"] - answers["expectations_passed"]
                                      and not calls_failed)
