"""The listening caller's choice (voicelab.call.scenario): a pure function of the agent's words and the state."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicelab.call.scenario import NextLine, Scenario, ScenarioError, State, parse_scenario

TEXTS = ["hi i would like to book a table", "it is carla", "my name is carla", "on friday", "at 7 pm",
         "it is for 4", "yes that is right", "sorry what was that", "no that is all thank you goodbye",
         "okay thanks goodbye"]
DOC = {
    "goal": "a table for 4 on friday at 7 pm, under carla",
    "opening": "hi i would like to book a table",
    "facts": [
        {"name": "name", "say": ["it is carla", "my name is carla"], "asked_by": ["your name", "name"]},
        {"name": "day", "say": "on friday", "asked_by": ["what day", "which day"]},
        {"name": "time", "say": "at 7 pm", "asked_by": ["what time"]},
        {"name": "party", "say": "it is for 4", "asked_by": ["how many"]},
    ],
    "confirm": {"say": "yes that is right", "asked_by": ["is that right"]},
    "repair": "sorry what was that",
    "done_when": ["is booked"],
    "closing": "no that is all thank you goodbye",
    "give_up": "okay thanks goodbye",
}
ASK = {"name": "May I have your name, please?", "day": "Thanks. What day would you like to come?",
       "time": "And what time?", "party": "How many people will there be?"}
SC = parse_scenario(DOC, TEXTS)


def _play(scenario: Scenario, replies: list[str]) -> tuple[list[NextLine], State]:
    state, out = State(), []
    for heard in replies:
        choice, state = scenario.next_line(heard, state)
        out.append(choice)
        if choice.line is None:
            break
    return out, state


@settings(max_examples=60, deadline=None)
@given(order=st.permutations(["name", "day", "time", "party"]))
def test_an_agent_asking_in_any_order_gets_each_fact_when_asked_and_the_task_is_done(order: list[str]) -> None:
    replies = ["Hello, table bookings, how can I help?", *(ASK[f] for f in order),
               "So a table for 4 on Friday at 7 pm for Carla. Is that right?",
               "Great, your table is booked. Anything else?", "You are welcome, goodbye!"]
    choices, state = _play(SC, replies)
    assert [c.why for c in choices] == ["opening", *(f"fact:{f}" for f in order), "confirm", "closing", "end"]
    by_fact = {f.name: f.say for f in SC.facts}
    for fact, choice in zip(order, choices[1:5], strict=True):
        assert choice.line in by_fact[fact]
    assert state.outcome == "done" and state.confirmed


@settings(max_examples=200, deadline=None)
@given(replies=st.lists(st.text(alphabet="abcdefghiklmnoprstuwy ?.,'", max_size=40) | st.sampled_from(
    [*ASK.values(), "sorry?", "is that right", "your table is booked", ""]), max_size=30))
def test_any_replies_end_within_the_line_budget_saying_only_the_scenarios_lines(replies: list[str]) -> None:
    state = State()
    for i, heard in enumerate(replies):
        before = state
        choice, state = SC.next_line(heard, state)
        assert SC.next_line(heard, before) == (choice, state)  # deterministic; the state it was given is unchanged
        if choice.line is None:
            assert state.ended is not None
            break
        assert choice.line in SC.lines
        assert i < SC.max_lines + 1
    assert len(state.said) <= SC.max_lines + 1
    assert state.outcome in ("done", "not_done", "gave_up")


@settings(max_examples=50, deadline=None)
@given(noise=st.lists(st.sampled_from(["hmm", "the weather is nice", "", "bicycle"]), min_size=6, max_size=10))
def test_words_it_cannot_place_get_one_repair_then_the_next_line_then_it_gives_up(noise: list[str]) -> None:
    choices, state = _play(SC, noise)
    whys = [c.why for c in choices]
    assert whys[:4] == ["opening", "repair", "go_on", "give_up"] and whys[4] == "end"
    assert choices[2].line == "it is carla"  # the plan's first line: the first fact, volunteered
    assert state.outcome == "gave_up"


CONFIRMED = [ASK["name"], ASK["day"], ASK["time"], ASK["party"], "A table for 4 on Friday at 7 pm. Is that right?"]


def test_a_reply_it_cannot_place_after_its_repair_goes_on_to_the_next_line_not_a_second_repair() -> None:
    # the booking is confirmed, the agent's answer never comes ("": no reply), "sorry?" is answered with words
    # that place nowhere: a person does not ask a second time; the closing follows, and the task is not done,
    # since the caller never heard it done
    choices, state = _play(SC, [*CONFIRMED, "", "you are welcome to visit any time"])
    assert [c.why for c in choices][-3:] == ["confirm", "repair", "go_on"]
    assert choices[-1].line == SC.closing and state.outcome == "not_done" and state.ended == "not_done"
    assert SC.next_line("bye", state)[0].why == "end"


def test_a_request_to_repeat_after_a_repair_repeats_what_the_repair_asked_about() -> None:
    choices, state = _play(SC, [*CONFIRMED, "", "Sorry, I did not catch that."])
    assert [c.line for c in choices][-3:] == ["yes that is right", "sorry what was that", "yes that is right"]
    assert choices[-1].why == "repeat"
    # the agent now says it is booked: the call closes with the task done
    assert SC.next_line("Great, your table is booked.", state)[0].why == "closing"


@settings(max_examples=100, deadline=None)
@given(asked=st.lists(st.sampled_from(list(ASK)), max_size=4, unique=True),
       noise=st.lists(st.sampled_from(["", "hmm", "bicycle"]), min_size=1, max_size=6))
def test_going_on_never_restates_a_given_fact_nor_volunteers_the_confirmation(asked: list[str],
                                                                              noise: list[str]) -> None:
    choices, state = _play(SC, ["Hello?", *(ASK[f] for f in asked), *noise])
    by_line = {s: f.name for f in SC.facts for s in f.say}
    gone_on = [c.line for c in choices if c.why == "go_on"]
    assert not {by_line[x] for x in gone_on if x in by_line} & set(asked)
    assert SC.confirm_say not in gone_on and len(set(gone_on)) == len(gone_on)


def test_a_request_to_repeat_repeats_the_last_line_and_a_known_fact_uses_its_next_wording() -> None:
    choices, state = _play(SC, [ASK["name"], "Sorry, could you say that again?"])
    assert [c.line for c in choices] == ["it is carla", "it is carla"] and state.repairs == 1
    choices, state = _play(SC, [ASK["name"], ASK["name"]])
    assert [c.line for c in choices] == ["it is carla", "my name is carla"]
    assert state.repairs == 0 and state.given == {"name"}


def test_done_words_before_every_fact_was_given_do_not_close() -> None:
    choice, _ = SC.next_line("your table is booked", State(said=("it is carla",), given=frozenset({"name"})))
    assert choice.why == "repair"


@pytest.mark.parametrize(("change", "field"), [
    ({"facts": []}, "scenario.facts"),
    ({"repair": "something never recorded"}, "scenario.repair"),
    ({"confirm": {"say": "yes", "asked_by": ["right"]}}, "scenario.confirm.say"),
    ({"max_repairs": -1}, "scenario.max_repairs"),
    ({"colour": "blue"}, "scenario.colour"),
    ({"goal": ""}, "scenario.goal"),
])
def test_a_bad_scenario_is_one_line_naming_the_field(change: dict, field: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario({**DOC, **change}, TEXTS, "x/fixture.json")
    assert str(e.value).startswith(f"x/fixture.json: {field}") and "\n" not in str(e.value)
