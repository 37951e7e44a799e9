"""docs/metrics.md's catalogue tables, generated from the figure catalogue (`voicelab.measure.figures`):
`python -m voicelab.measure.catalogue_doc` rewrites the block between its markers; a test keeps the two equal.
"""

from __future__ import annotations

import sys
from pathlib import Path

from voicelab.measure.figure import Figure
from voicelab.measure.figure_views import Paired
from voicelab.measure.figures import figures, views

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _turn_text(f: Figure) -> str:
    if f.turn is None:
        return "—"
    return "`turn_table`" if f.computed else _cell(str(f.turn))


def _summary_text(f: Figure) -> str:
    return "; ".join(f"`{s.key}`: {_cell(s.stat)}" for s in f.summary) or "—"


def catalogue_markdown() -> str:
    """The generated block of docs/metrics.md: every figure (unit, direction, where its value comes from, its
    summary, whether a line run measures it) and the `voicelab compare` figures with a `--fail-on` example."""
    lines = [BEGIN, "<!-- generated from voicelab/measure/figures.py by `python -m voicelab.measure.catalogue_doc`; "
             "do not edit -->", "",
             "| figure | unit | better | per turn | summary.json | line run | meaning |",
             "|---|---|---|---|---|---|---|"]
    line_text = {"events": "yes", "recording": "from the recording", "no": "no"}
    for f in figures():
        lines.append(f"| `{f.name}` | {_cell(f.unit)} | {f.better or '—'} | {_turn_text(f)} | {_summary_text(f)} "
                     f"| {line_text[f.line]} | {_cell(f.doc)} |")
    lines += ["", "`voicelab compare` figures (`--fail-on NAME:+THRESHOLD`; `ms` only for millisecond figures, `%` "
              "divides by 100):", "", "| name | figure | per-turn column | statistic | example |", "|---|---|---|---|---|"]
    lines += [f"| `{p.name}` | {p.label} | `{f.name}` | {p.stat} | `{p.name}:{p.example}` |" for f, p in views(Paired)]
    return "\n".join([*lines, END])


def replace_block(text: str, block: str) -> str | None:
    """`text` with its BEGIN ... END block replaced; None when the markers are missing."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return None
    return text[:start] + block + text[end + len(END):]


def main(doc: Path = DOC) -> int:
    """Rewrite docs/metrics.md's catalogue block from the catalogue."""
    text = doc.read_text(encoding="utf-8")
    new = replace_block(text, catalogue_markdown())
    if new is None:
        print(f"{doc}: no {BEGIN} ... {END} markers", file=sys.stderr)
        return 2
    if new != text:
        doc.write_text(new, encoding="utf-8")
    print(f"{doc}: {len(figures())} figures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
