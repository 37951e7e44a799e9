"""The one tool-span grammar (`engines.tool_span`) against the readers it replaced.

The gate, the shop's scorer, the mock server, the metrics and the read-back each had their own regular
expression for `[name(k=v)]`. Their old code is frozen here: on every span the engines write, and on the
slips a tiny engine makes (a lost comma, an empty value, a doubled "=", an unclosed span), the shared
grammar gives what each gave. Where the old readers disagreed with the gate on a span outside the grammar,
the table at the end pins what they do now.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.shop import corpus
from engines.shop.answers import tool_span
from engines.simulated.mock_server import _ToolSplitter
from engines.tool_span import find_spans, parse_span, span_end, span_name, split_args, strip_spans
from voicelab.measure.metrics import spoken_words

# ---- the old readers, as they were ---------------------------------------------------------------------

_OLD_METRICS_SPAN = re.compile(r"\[[^\]]*\]")
_OLD_SHOP_START = re.compile(r"^\s*\[\s*(\w+)")
_OLD_SHOP_CALL = re.compile(r"^\s*\[(\w+)\(([^()\[\]]*)\)\]")
_OLD_MOCK_SPAN = re.compile(r"\[(\w+)\((.*?)\)\]")
_OLD_READBACK_SPAN = re.compile(r"^\s*\[[^\]]*\]\s*")


def _old_shop(reply: str) -> tuple[str, dict[str, str], bool] | None:
    m = _OLD_SHOP_CALL.match(reply)
    if m:
        args: dict[str, str] = {}
        ok = True
        for part in m.group(2).split(","):
            k, sep, v = part.strip().partition("=")
            if not sep or not re.fullmatch(r"\w+", k) or not v.strip() or "=" in v:
                ok = False
                continue
            args[k] = v.strip()
        return m.group(1), args, ok
    s = _OLD_SHOP_START.match(reply)
    return (s.group(1), {}, False) if s else None


class _OldSplitter(_ToolSplitter):
    def feed(self, text: str) -> list[dict[str, Any]]:
        self.buf += text
        out: list[dict[str, Any]] = []
        while self.buf:
            at = self.buf.find("[")
            if at < 0:
                out.append({"content": self.buf})
                self.buf = ""
                break
            if at:
                out.append({"content": self.buf[:at]})
            self.buf = self.buf[at:]
            m = _OLD_MOCK_SPAN.match(self.buf)
            if m is None:
                break
            args = {}
            for part in (p for p in m.group(2).split(", ") if p):
                k, _, v = part.partition("=")
                args[k.strip()] = v.strip()
            out += [{"tool_calls": [f]} for f in self._fragments(m.group(1), args)]
            self.buf = self.buf[m.end():].lstrip(" ")
        return out


# ---- what the engines write, and their usual slips ---------------------------------------------------

_IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,7}", fullmatch=True)
_VALUE = st.from_regex(r"[a-z0-9]{1,6}( [a-z0-9]{1,6}){0,2}", fullmatch=True)
_WORDS = st.from_regex(r"( [a-z0-9.,?']{1,8}){0,4}", fullmatch=True)


@st.composite
def _span(draw: st.DrawFn) -> str:
    """A span as the corpus writes it, possibly with one slip of a generating engine."""
    keys = draw(st.lists(_IDENT, min_size=1, max_size=4, unique=True))
    args = [f"{k}={draw(_VALUE)}" for k in keys]
    slip = draw(st.sampled_from(["none", "comma", "empty", "equals", "unclosed", "cut"]))
    i = draw(st.integers(0, len(args) - 1))
    if slip == "empty":
        args[i] = args[i].split("=")[0] + "="
    elif slip == "equals":
        args[i] = args[i].replace("=", "==", 1)
    sep = " " if slip == "comma" else ", "
    span = f"[{draw(_IDENT)}({sep.join(args)})]"
    if slip == "unclosed":
        span = span[:-1]
    elif slip == "cut":
        span = span[:draw(st.integers(1, len(span) - 1))]
    return span


@st.composite
def _reply(draw: st.DrawFn) -> str:
    lead = draw(st.sampled_from(["", " ", "\n"]))
    if draw(st.booleans()):
        return lead + draw(_span()) + draw(_WORDS)
    return lead + draw(_WORDS).lstrip() + (draw(_span()) if draw(st.booleans()) else "")


# ---- the same behaviour ----------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="[]()=,'\" ab_1\n", max_size=40))
def test_strip_spans_is_the_metrics_old_regex_on_any_text(text: str) -> None:
    assert strip_spans(text) == _OLD_METRICS_SPAN.sub(" ", text)
    assert [(m.start(), m.end()) for m in _OLD_METRICS_SPAN.finditer(text)] == list(find_spans(text))


@settings(max_examples=400, deadline=None)
@given(_reply())
def test_the_scorer_reads_a_reply_as_before(reply: str) -> None:
    old, new = _old_shop(reply), tool_span(reply)
    assert (old is None) == (new is None)
    if old is not None and new is not None:
        assert (new.name, new.well_formed) == (old[0], old[2])
        if old[2]:
            assert new.args == old[1]


@settings(max_examples=300, deadline=None)
@given(_reply(), st.lists(st.integers(1, 12), max_size=6))
def test_the_mock_splits_a_stream_as_before(reply: str, cuts: list[int]) -> None:
    pieces, rest = [], reply
    for n in cuts:
        pieces.append(rest[:n])
        rest = rest[n:]
    pieces.append(rest)
    old, new = _OldSplitter(), _ToolSplitter()
    for piece in pieces:
        assert new.feed(piece) == old.feed(piece)
    assert (new.buf, new.calls) == (old.buf, old.calls)


def test_every_corpus_reply_reads_the_same_everywhere() -> None:
    for _key, (_intent, template) in corpus.REPLIES.items():
        assert strip_spans(template, "").lstrip() == _OLD_READBACK_SPAN.sub("", template)
    for e in corpus.generate(300, 3):
        old = _old_shop(e.reply)
        new = tool_span(e.reply)
        assert (new and (new.name, new.args, new.well_formed)) == old
        assert spoken_words(e.reply) == spoken_words(_OLD_METRICS_SPAN.sub(" ", e.reply))


def test_the_pieces() -> None:
    assert span_end("a [b(x=1)] c", 2) == 10 and span_end("a [b(x=1", 2) == -1
    assert list(find_spans("[a()] x [b] [c")) == [(0, 5), (8, 11)]
    assert strip_spans("x [a()] y [z", "") == "x  y [z"
    assert span_name("[ cancel(name=") == "cancel" and span_name("[(x)]") is None
    assert split_args("a=1, b='2, 3'") == ["a=1", " b='2, 3'"] and split_args("a='1") is None
    assert parse_span("[book(day=friday, note=\"a, b\")]") == ("book", {"day": "friday", "note": "a, b"})


# ---- where the old readers differed from the gate: one grammar now --------------------------------------


@pytest.mark.parametrize("reply,well_formed", [
    ("[ cancel(name=ana, day=monday)] ok", True),  # spaces around the name: the gate always took them
    ("[cancel (name=ana)] ok", True),
    ("[cancel(name='ana, b')] ok", True),  # a quoted value holding a comma
    ("[cancel(name=ana, day=mon'day)] ok", False),  # a quote left open
    ("[cancel(name=ana, name=ben)] ok", False),  # a key given twice
    ("[1cancel(name=ana)] ok", False),  # a name that is no identifier
    ("[cancel(name=an(a)] ok", True),  # brackets inside a value
])
def test_the_scorer_follows_the_gate_outside_the_old_grammar(reply: str, well_formed: bool) -> None:
    span = tool_span(reply)
    assert span is not None and span.well_formed is well_formed
    assert span.name == _old_shop(reply)[0]  # the tool named is as before
    assert (parse_span(reply.split("]")[0] + "]") is not None) is well_formed
