"""The HTTP streaming engines against the mock server, for real over loopback."""

from __future__ import annotations

import asyncio
import time

import pytest

from engines.errors import (
    EngineConnectError,
    EngineProtocolError,
    EngineRateLimitError,
    EngineServerError,
    EngineSpecError,
    EngineTimeoutError,
)
from engines.hosted.chat_stream import ChunkAssembler, parse_sse_line, render_tool_span
from engines.hosted.mercury import MercuryEngine, looks_like_replacement
from engines.hosted.openai_stream import OpenAIStreamEngine
from engines.protocol import EngineLike, GenerationLike
from engines.simulated.mock_server import _ToolSplitter
from engines.tool_span import parse_span

BOOK = [{"role": "user", "content": "can i book a tune up on friday at 10 am my name is anna"}]
HOURS = [{"role": "user", "content": "what time do you open on monday"}]
# several caller lines: the mock answers each with the tiny engine and joins them (more than one block)
LONG = [{"role": "user", "content": "what time do you open on monday\ncan i book a tune up on friday at 10 am "
         "my name is anna\nwhere is order 4821"}]


@pytest.fixture(scope="module")
def mock():
    import torch

    torch.set_num_threads(1)
    from engines.simulated.mock_server import start_mock

    m = start_mock(seed=0)
    yield m
    m.stop()


def test_render_tool_span_round_trips_through_the_gate_syntax() -> None:
    span = render_tool_span("book", '{"day": "friday", "time": "10 am", "note": "a, b [x]"}')
    assert parse_span(span) == ("book", {"day": "friday", "time": "10 am", "note": "a, b (x)"})
    assert parse_span(render_tool_span("f", "not json")) == ("f", {"arguments": "not json"})


def test_assembler_joins_tool_fragments_by_index_and_reads_usage() -> None:
    a = ChunkAssembler("test")
    frags = [{"index": 0, "id": "c0", "function": {"name": "bo", "arguments": '{"da'}},
             {"index": 0, "function": {"name": "ok", "arguments": 'y": "fri"}'}},
             {"index": 1, "id": "c1", "function": {"name": "cancel", "arguments": "{}"}}]
    items = []
    for f in frags:
        items += a.feed({"choices": [{"index": 0, "delta": {"tool_calls": [f]}, "finish_reason": None}]}).items
    items += a.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).items
    a.feed({"choices": None, "usage": {"prompt_tokens": 7, "completion_tokens": 3}})  # vLLM's usage chunk
    assert items == [("tool", "[book(day=fri)]"), ("tool", "[cancel()]")]
    assert a.usage.input_tokens == 7 and a.usage.output_tokens == 3 and a.finish_reason == "tool_calls"
    with pytest.raises(EngineProtocolError, match="malformed JSON"):
        parse_sse_line('data: {"choices": [', "test")


def test_openai_engine_streams_content_and_usage(mock) -> None:
    eng = OpenAIStreamEngine("gpt-4.1-mini", base_url=mock.url)
    assert isinstance(eng, EngineLike)
    gen = eng.generate(HOURS)
    assert isinstance(gen, GenerationLike)
    snaps = list(gen)
    assert snaps[-1].done and snaps[-1].text() == "on monday we are open from 9 am to 6 pm."
    assert len(snaps) > 5 and all(not s.revised for s in snaps)  # token deltas, append-only
    for a, b in zip(snaps, snaps[1:], strict=False):
        assert b.text().startswith(a.text()) and b.t_ns >= a.t_ns
    assert gen.usage.output_tokens == len(snaps) - 1 and gen.usage.input_tokens > 0
    assert gen.finish_reason == "stop" and eng.usage_total.output_tokens == gen.usage.output_tokens
    d = eng.describe()
    assert d["engine"] == "openai:gpt-4.1-mini" and d["auth"] == "none" and eng.kind == "autoregressive"


def test_api_key_comes_from_the_named_variable_and_is_never_described(mock, monkeypatch) -> None:
    monkeypatch.setenv("VOICELAB_TEST_KEY", "sk-secret-123")
    eng = OpenAIStreamEngine("ar", base_url=mock.url, api_key_env="VOICELAB_TEST_KEY")
    assert eng.headers()["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret-123" not in str(eng.describe()) and "VOICELAB_TEST_KEY" not in str(eng.describe())
    assert list(eng.generate(HOURS))[-1].done  # the tiny AR engine's own stream
    with pytest.raises(EngineSpecError, match="VOICELAB_UNSET_KEY"):
        OpenAIStreamEngine("ar", base_url=mock.url, api_key_env="VOICELAB_UNSET_KEY")


def test_tool_calls_stream_as_fragments_and_become_a_span(mock) -> None:
    eng = OpenAIStreamEngine("gemini-2.5-flash", base_url=mock.url,
                             tools=[{"type": "function", "function": {"name": "book"}}])
    gen = eng.generate(BOOK)
    final = list(gen)[-1]
    assert gen.tool_calls == [{"index": 0, "id": "call_0", "name": "book",
                               "arguments": '{"day": "friday", "time": "10 am", "name": "anna"}'}]
    assert final.text() == "[book(day=friday, time=10 am, name=anna)] great anna, a tune up is booked for friday at 10 am."
    assert gen.finish_reason == "tool_calls"


async def test_cancel_mid_stream_closes_at_once(mock) -> None:
    eng = OpenAIStreamEngine("gpt-4.1-mini", base_url=mock.url)  # 80 t/s: a gap of ~12 ms per token
    gen = eng.generate(BOOK)
    n = 0
    async for _ in gen:
        n += 1
        if n == 3:
            asyncio.get_running_loop().call_later(0.002, gen.cancel)
    assert gen.cancelled and 3 <= n < 10 and not gen.last.done


def test_cancel_from_another_thread_stops_a_sync_stream(mock) -> None:
    import threading

    eng = OpenAIStreamEngine("mercury-2", base_url=mock.url)  # first text only after 3.5 s
    gen = eng.generate(BOOK)
    threading.Timer(0.3, gen.cancel).start()
    t0 = time.monotonic()
    assert list(gen) == [] and time.monotonic() - t0 < 1.0


@pytest.mark.parametrize(("fault", "error", "match"), [
    ("429", EngineRateLimitError, "HTTP 429"),
    ("500", EngineServerError, "HTTP 500"),
    ("hang", EngineTimeoutError, "no first byte"),
    ("stall", EngineTimeoutError, "stalled"),
    ("disconnect", EngineProtocolError, "connection lost mid-answer"),
    ("malformed", EngineProtocolError, "malformed JSON"),
])
@pytest.mark.slow
def test_each_fault_is_a_clean_typed_error(mock, fault, error, match) -> None:
    eng = OpenAIStreamEngine(f"gpt-oss-20b~{fault}", base_url=mock.url, first_byte_timeout_s=0.8,
                             stall_timeout_s=0.5)
    t0 = time.monotonic()
    gen = eng.generate(HOURS)
    with pytest.raises(error, match=match):
        list(gen)
    assert time.monotonic() - t0 < 5
    assert gen.attempts == (2 if fault in ("429", "500", "hang") else 1)  # retried only before the first byte


def test_one_retry_cures_a_single_fault(mock) -> None:
    eng = OpenAIStreamEngine("gpt-oss-20b~500x1", base_url=mock.url)
    gen = eng.generate(HOURS)
    assert list(gen)[-1].text() == "on monday we are open from 9 am to 6 pm." and gen.attempts == 2


def test_refused_connection_is_a_connect_error() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(EngineConnectError, match="ConnectError"):
        list(OpenAIStreamEngine("x", base_url=f"http://127.0.0.1:{port}/v1").generate(HOURS))


@pytest.mark.slow
def test_mercury_diffusing_replace_drafts_are_revisions(mock) -> None:
    eng = MercuryEngine("mercury-2", base_url=mock.url, diffusing=True)
    assert eng.kind == "diffusion"
    gen = eng.generate(BOOK)
    snaps = list(gen)
    # the mock skips drafts already overdue (engines/simulated/mock_server.py), so on a loaded machine the second
    # chunk may be a later draft too unlike the first to read as one, and the client's guess is corrected on the
    # next chunk ("replace-late"): which of the two depends on the machine, the shape reached does not
    assert gen.shape == "replace"
    assert eng.describe()["shapes_seen"] in ({"replace": 1}, {"append": 1, "replace-late": 1})
    assert sum(len(s.revised) for s in snaps) > 0
    assert snaps[-1].text() == "[book(day=friday, time=10 am, name=anna)] great anna, a tune up is booked for friday at 10 am."


@pytest.mark.slow
def test_mercury_append_shape_and_plain_mode_are_append_only(mock) -> None:
    eng = MercuryEngine("mercury-2", base_url=mock.url, diffusing=True, headers={"X-Mock-Shape": "append"})
    gen = eng.generate(LONG)
    snaps = list(gen)
    assert gen.shape == "append" and not any(s.revised for s in snaps)
    assert snaps[-1].text().startswith("on monday we are open from 9 am to 6 pm. [book(day=friday")
    plain = MercuryEngine("celeris-1", base_url=mock.url, diffusing=False)
    assert plain.kind == "autoregressive" and plain.describe()["extra_body"] == {"realtime": True}
    assert not any(s.revised for s in plain.generate(HOURS))


def test_replacement_heuristic() -> None:
    assert looks_like_replacement("on monday we", "on monday we are open")
    assert looks_like_replacement("on fri we are oxen", "on monday we are open")
    assert not looks_like_replacement("on monday we", " are open from 9")
    assert not looks_like_replacement("", "anything")


@pytest.mark.slow
def test_gate_withholds_diffusing_revisions_under_final(mock) -> None:
    from voicelab.gate import Gate, GatePolicy

    snaps = list(MercuryEngine("mercury-2", base_url=mock.url, diffusing=True).generate(BOOK))
    final, prefix = Gate(GatePolicy.parse("final")), Gate(GatePolicy.parse("prefix"))
    for s in snaps:
        final.feed(s, s.t_ns)
        prefix.feed(s, s.t_ns)
    assert not final.damaged_chunks() and final.released_text == snaps[-1].text()
    assert prefix.damaged_chunks()  # the prefix policy spoke drafts that were later revised


def test_the_mock_streams_a_span_before_the_words_that_came_with_it() -> None:
    # a profile's clock can send a span's end and the next words in one piece (a loaded machine catches up):
    # the tool call's fragments must still come first, as they do in the answer
    sp = _ToolSplitter()
    assert sp.feed("[book(day=fri") == []
    deltas = sp.feed("day, name=anna)] great anna, a")
    assert [next(iter(d)) for d in deltas] == ["tool_calls"] * (len(deltas) - 1) + ["content"]
    assert deltas[-1] == {"content": "great anna, a"} and sp.calls == 1
    assert sp.feed("sure [x") == [{"content": "sure "}]  # an open span waits for its end
