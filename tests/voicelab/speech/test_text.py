from voicelab.speech.text import spoken_numbers_to_digits as n


def test_times_and_spelled_numbers_become_digits() -> None:
    assert n("i would like to book a tune up on thursday at two pm") == \
        "i would like to book a tune up on thursday at 2 pm"
    assert n("move me to friday at ten thirty a m") == "move me to friday at 10 30 am"
    assert n("can you check my order four seven one two nine") == "can you check my order 4 7 1 2 9"
    assert n("my number is five five five oh one two three") == "my number is 5 5 5 0 1 2 3"
    assert n("at eleven o'clock") == "at 11"
    assert n("twenty five") == "25"


def test_words_that_are_not_numbers_stay() -> None:
    assert n("oh hi is this the bike shop") == "oh hi is this the bike shop"
    assert n("someone at nineteen") == "someone at 19"
    assert n("") == ""


def test_executed_tool_calls_return_to_the_engines_history() -> None:
    from voicelab.pipeline.services.llm_service import with_tool_spans

    msgs = [{"role": "user", "content": "i want a tune up on friday at 10 am"},
            {"role": "assistant", "content": "great anna, a tune up is booked for friday at 10 am."},
            {"role": "user", "content": "can you read that back to me"}]
    mem = {"i want a tune up on friday at 10 am": ["[book(day=friday, time=10 am, name=anna)]"]}
    out = with_tool_spans(msgs, mem)
    assert out[1]["content"] == "[book(day=friday, time=10 am, name=anna)] great anna, a tune up is booked " \
                                "for friday at 10 am."
    assert out[0] == msgs[0] and out[2] == msgs[2]
    assert with_tool_spans(msgs, {}) == msgs


def test_whole_hours_with_am_pm_lose_their_zero_minutes() -> None:
    # Whisper writes "2:00 PM" where pocketsphinx writes "two p m": both compare as "2 pm"
    from voicelab.speech.text import recognizer_text

    assert recognizer_text("On Friday at 2:00 PM.") == recognizer_text("on friday at two p m") == "on friday at 2 pm"
    assert recognizer_text("2:00 p.m.") == "2 pm" and recognizer_text("10:30 AM") == "10 30 am"
