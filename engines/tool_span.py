"""The tool-span grammar: how an answer's text writes a tool call, `[name(k=v, k2='v, 2')]`.

Part of the engine contract: standard library only. A span runs from "[" to the first "]" after it (spans do
not nest). Inside: a name (an ASCII identifier), then in parentheses comma-separated `key=value` arguments
(possibly none); keys are distinct identifiers; a value may be quoted ('...' or "...") so that it can hold a
comma, and the quotes are dropped. Whitespace around the name, the parentheses, each key and each value is
ignored. A span is never spoken.

Who reads spans: the stable-chunk gate parses each span as it commits (`voicelab.gate`), the shop's scorer
reads a reply's leading span (`engines.shop.answers`), the mock server turns spans into streamed tool calls
(`engines.simulated.mock_server`), and the metrics drop spans from the words they compare.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

OPEN = "["
CLOSE = "]"
_SPAN = re.compile(r"^\[\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*\]$", re.S)
_NAME = re.compile(r"\[\s*(\w+)")  # the name a span opens with, parsed or not


def span_end(text: str, start: int) -> int:
    """One past the "]" closing the span that opens at `text[start]`; -1 while it is still open."""
    close = text.find(CLOSE, start)
    return -1 if close < 0 else close + 1


def find_spans(text: str) -> Iterator[tuple[int, int]]:
    """The closed spans in `text` as (start, end) offsets, left to right; an unclosed "[" ends the search."""
    start = text.find(OPEN)
    while start >= 0:
        end = span_end(text, start)
        if end < 0:
            return
        yield start, end
        start = text.find(OPEN, end)


def strip_spans(text: str, fill: str = " ") -> str:
    """`text` with every closed span replaced by `fill` (an unclosed "[" stays, it may be ordinary text)."""
    out: list[str] = []
    pos = 0
    for start, end in find_spans(text):
        out += [text[pos:start], fill]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def span_name(raw: str) -> str | None:
    """The word a span opens with, whether or not the span parses (names a malformed or unclosed span)."""
    m = _NAME.match(raw)
    return m.group(1) if m else None


def parse_span(raw: str) -> tuple[str, dict[str, str]] | None:
    """Parse "[name(k=v, k2='v, 2')]" into (name, args); None if it is not that form."""
    m = _SPAN.match(raw.strip())
    if m is None:
        return None
    name, body = m.group(1), m.group(2).strip()
    args: dict[str, str] = {}
    if not body:
        return name, args
    parts = split_args(body)
    if parts is None:
        return None
    for part in parts:
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key.isidentifier() or key in args:
            return None
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        args[key] = value
    return name, args


def split_args(body: str) -> list[str] | None:
    """Split an argument list on the commas outside quotes; None if a quote is left open."""
    parts: list[str] = []
    cur: list[str] = []
    quote = ""
    for ch in body:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch == ",":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if quote:
        return None
    parts.append("".join(cur))
    return parts
