"""`voicelab profiles`: the engine timing profiles (engines/simulated/profiles.py) that `--engine profile:NAME` plays."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from engines.simulated.profiles import profile_table


def _price(v: float | None) -> str:
    return "—" if v is None else f"${v:.2f}"


def profiles(
    wide: Annotated[bool, typer.Option(help="also show each row's note")] = False,
) -> None:
    """List the timing profiles: first answer, output speed, kind, source, date, vendor figure, prices."""
    t = Table(title="engine timing profiles (--engine profile:NAME)")
    cols = ["name", "kind", "first answer s", "tokens/s", "vendor figure", "source", "date", "$ in / M",
            "$ out / M", *(["note"] if wide else [])]
    for c in cols:
        t.add_column(c, justify="right" if c in ("first answer s", "tokens/s", "$ in / M", "$ out / M") else "left",
                     overflow="fold", no_wrap=c in ("name", "kind"))
    for r in profile_table():
        t.add_row(r["name"], r["kind"], f"{r['first_answer_s']:.3g}", f"{r['tokens_per_s']:,.0f}",
                  "yes" if r["vendor_figure"] else "no", r["source"], r["date"] or "—", _price(r["price_in_per_m"]),
                  _price(r["price_out_per_m"]), *([r["note"]] if wide else []))
    Console(width=None if sys.stdout.isatty() else 200).print(t)
    typer.echo("Comparison-feed rows are one feed's measurements of public endpoints; vendor rows are the vendor's "
               "own configuration. A profile replays timing only: the words are the tiny engines'.")
