"""The listening caller (voicelab.call.listening) against a scripted bot on a simulated clock: each line is chosen
from the words of the reply before it, started by its own start rule, and the task outcome is reported."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from voicelab.call.carrier import CallOptions
from voicelab.call.listening import (
    REPAIR_WAIT_S,
    Ear,
    ListeningCaller,
    as_script,
    listening_options,
    load_scenarios,
)
from voicelab.call.pacing import LINE_RATE
from voicelab.call.scenario import ScenarioError
from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.measure.recording import CallRecorder

FIXTURE = FIXTURES_ROOT / "booking_table_scenario"


@dataclass
class _Heard:
    raw: str


class _ScriptedRecognizer:
    """Says the agent's next prompt whatever the audio: one reading per stretch of reply."""

    def __init__(self, prompts: list[str]) -> None:
        self.prompts = list(prompts)
        self.calls = 0

    def transcribe(self, audio: object) -> _Heard:
        self.calls += 1
        return _Heard(self.prompts.pop(0) if self.prompts else "")


async def _converse(prompts: list[str], pauses: dict[int, float] | None = None,
                    late: dict[int, tuple[float, float]] | None = None,
                    ) -> tuple[ListeningCaller, list[tuple[int, float]]]:
    """A bot that greets from 0.5 to 2.5 s and speaks 2 s, 0.8 s after each caller line ends (its reply to line k
    in two 1 s stretches `pauses[k]` s apart where given; or `late[k]` = (onset, length): one stretch that long,
    that long after the line ends); returns the caller and (turn, start) of every line it played."""
    fx = load_fixture(FIXTURE, sample_rate=LINE_RATE)
    scenario = load_scenarios([fx])[str(fx.path)]
    recorder = CallRecorder(LINE_RATE, seconds=120.0)
    recorder.mark(120 * LINE_RATE)
    caller = ListeningCaller(fx, scenario, Ear(_ScriptedRecognizer(prompts)), recorder)
    pending = [(0.5, "on"), (2.5, "off")]
    played: list[tuple[int, float]] = []
    t = 0.0
    while t < 110.0 and not caller.done(t):
        for ev in sorted(e for e in pending if e[0] <= t):
            pending.remove(ev)
            (caller.bot_audio_started if ev[1] == "on" else caller.bot_audio_stopped)(ev[0])
        for clip in caller.due(t):
            caller.clip_started(clip.turn, clip.start_s)
            played.append((clip.turn, clip.start_s))
            end = clip.start_s + caller.played[clip.turn].duration_s
            gap = (pauses or {}).get(clip.turn)
            if clip.turn in (late or {}):
                onset, length = (late or {})[clip.turn]
                pending += [(end + onset, "on"), (end + onset + length, "off")]
                continue
            pending += [(end + 0.8, "on"), (end + 2.8, "off")] if gap is None else \
                [(end + 0.8, "on"), (end + 1.8, "off"), (end + 1.8 + gap, "on"), (end + 2.8 + gap, "off")]
        for _ in range(200):  # let a reading finish in its worker thread
            if all(j.done() for j in caller._jobs.values()):
                break
            await asyncio.sleep(0.001)
        t = round(t + 0.02, 6)
    return caller, played


def test_each_line_answers_the_reply_before_it_and_the_task_is_done() -> None:
    prompts = ["Hello, Harbour Kitchen. May I have your name, please?", "What day would you like to come?",
               "And what time?", "How many people will there be?", "A table for 4 on Friday at 7 pm. Is that right?",
               "Great, your table is booked.", "Goodbye!"]
    caller, played = asyncio.run(_converse(prompts))
    assert [t.text for t in caller.played] == ["it is carla", "on friday", "at 7 pm", "it is for 4",
                                               "yes that is right", "no that is all thank you goodbye"]
    assert [h["why"] for h in caller.heard] == ["fact:name", "fact:day", "fact:time", "fact:party", "confirm",
                                                "closing"]
    assert caller.outcome == "done" and caller.report()["outcome"] == "done"
    # each line starts by its own rule: its delay after the end of the reply it answers (the reading was instant)
    assert played[0][1] == pytest.approx(2.5 + caller.played[0].start.delay_s, abs=0.03)
    assert all(h["late_ms"] <= 30 for h in caller.heard)
    assert [turn for turn, _ in played] == list(range(6))


# a booking agent whose read-back is two sentences ("A table for 4 ... 7 pm." then "Is that right?")
SPLIT_CONFIRMATION = ["Hello, Harbour Kitchen. May I have your name, please?", "What day would you like to come?",
                      "And what time?", "How many people will there be?", "A table for 4 on Friday at 7 pm.",
                      "Is that right?", "Great, your table is booked.", "Goodbye!"]


def test_a_reply_that_goes_on_after_the_caller_chose_is_heard_whole_before_the_caller_speaks() -> None:
    # the confirmation comes in two sentences 0.47 s apart: past the caller's patience (0.45 s, its quickest
    # line), so a line is chosen on the first sentence alone ("repair"), but the agent talks again before that
    # line's own delay (0.5 s) is up; the caller has not spoken, so it hears the question out and confirms
    caller, played = asyncio.run(_converse(SPLIT_CONFIRMATION, pauses={3: 0.47}))
    assert [h["why"] for h in caller.heard] == ["fact:name", "fact:day", "fact:time", "fact:party", "confirm",
                                                "closing"]
    assert caller.heard[4]["heard"] == "a table for 4 on friday at 7 pm is that right"
    assert caller.outcome == "done" and caller.report()["reconsidered"] == 1
    assert [turn for turn, _ in played] == list(range(6))


def test_a_reply_paused_longer_than_the_lines_delay_is_still_heard_out_before_a_repair() -> None:
    # the same two sentences 0.8 s apart: longer than any line's delay (0.5 s), shorter than the wait before a
    # repair (1 s); the first sentence asks for nothing, so the repair waits, the question comes, and it confirms
    caller, played = asyncio.run(_converse(SPLIT_CONFIRMATION, pauses={3: 0.8}))
    assert [h["why"] for h in caller.heard] == ["fact:name", "fact:day", "fact:time", "fact:party", "confirm",
                                                "closing"]
    assert caller.outcome == "done" and caller.report()["reconsidered"] == 1
    assert REPAIR_WAIT_S > max(t.start.delay_s for t in caller.played)


def test_an_agent_that_never_answers_gets_a_repair_then_the_next_line_then_the_caller_gives_up() -> None:
    caller, played = asyncio.run(_converse(["hello, how can i help"] + ["mm"] * 10))
    assert [h["why"] for h in caller.heard] == ["opening", "repair", "go_on", "give_up"]
    assert caller.outcome == "gave_up" and len(played) == 4


BOOKED_LATE = ["Hello, Harbour Kitchen. May I have your name, please?", "What day would you like to come?",
               "And what time?", "How many people will there be?",
               "A table for 4 on Friday at 7 pm. Is that right?", "great your"]


@pytest.mark.parametrize(("after_repair", "whys", "outcome"), [
    # the agent says it again when asked: the task is done
    (["Great, your table is booked. Is there anything else?", "Goodbye!"], ["repair", "closing"], "done"),
    # the agent answers the repair with words that place nowhere: the caller goes on, it does not ask twice
    (["you are welcome to visit any time", "Goodbye!"], ["repair", "go_on"], "not_done"),
])
def test_a_reply_later_than_the_callers_patience_and_cut_by_its_repair(after_repair: list[str], whys: list[str],
                                                                        outcome: str) -> None:
    # a loaded machine: the agent's answer to the confirmation comes 7 s after it (past the caller's 6 s of
    # patience), begins while the caller says "sorry what was that", and the agent stops it there (its own
    # interruption); what it says next decides the call, never a second "sorry what was that"
    caller, played = asyncio.run(_converse(BOOKED_LATE + after_repair, late={4: (7.0, 0.4)}))
    assert [h["why"] for h in caller.heard][4:] == ["confirm", *whys]
    assert [t.text for t in caller.played].count("sorry what was that") == 1
    assert caller.outcome == outcome


def test_the_fixed_script_is_the_scenarios_script_in_order() -> None:
    fx = load_fixture(FIXTURE, sample_rate=LINE_RATE)
    script = as_script(fx)
    assert tuple(t.text for t in script.turns) == load_scenarios([fx])[str(fx.path)].script
    assert [t.index for t in script.turns] == list(range(6)) and len(fx.turns) == 9


def test_a_fixture_without_a_scenario_keeps_its_scheduler_and_options() -> None:
    fx = load_fixture(FIXTURES_ROOT / "single_question", sample_rate=LINE_RATE)
    opts = CallOptions()
    assert listening_options(opts, [fx], load_scenarios([fx]), lambda: _ScriptedRecognizer([])) is opts
    assert as_script(fx) is fx


def test_the_listening_options_leave_room_for_every_line(tmp_path: Path) -> None:
    fx = load_fixture(FIXTURE, sample_rate=LINE_RATE)
    opts = listening_options(CallOptions(), [fx], load_scenarios([fx]), lambda: _ScriptedRecognizer([]))
    assert opts.caller is not None and opts.max_call_s is not None and opts.max_call_s > 13 * 6.0
    played, caller = opts.caller(fx, CallRecorder(LINE_RATE), opts)
    assert isinstance(caller, ListeningCaller) and played.turns == [] and played.name == fx.name


def test_a_scenario_naming_a_line_the_fixture_lacks_is_refused_before_any_call() -> None:
    fx = load_fixture(FIXTURE, sample_rate=LINE_RATE)
    bad = replace(fx, scenario={**(fx.scenario or {}), "repair": "pardon me"})
    with pytest.raises(ScenarioError, match=r"scenario\.repair: 'pardon me' is no turn's text"):
        load_scenarios([bad])


def test_voicelab_call_refuses_a_bad_scenario_in_one_line_before_dialing(tmp_path: Path) -> None:
    import json
    import shutil

    import typer
    from typer.testing import CliRunner

    from voicelab.cli.call import call

    fx = tmp_path / "bad_scenario"
    shutil.copytree(FIXTURE, fx)
    doc = json.loads((fx / "fixture.json").read_text(encoding="utf-8"))
    doc["scenario"]["facts"][0]["say"] = ["my name is nobody"]
    (fx / "fixture.json").write_text(json.dumps(doc), encoding="utf-8")
    app = typer.Typer()
    app.command()(call)
    res = CliRunner().invoke(app, ["ws://127.0.0.1:9/media-stream", str(fx), "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2
    assert "scenario.facts[0].say: 'my name is nobody' is no turn's text" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "runs").exists()
