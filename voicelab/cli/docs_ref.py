"""docs/cli.md, generated from the typer app so it cannot drift from the commands.

`render()` walks the command tree of `voicelab.cli.app:app` (`typer.main.get_command`): every command and
subcommand with its help, its arguments and its options (type, default, help), grouped by the help panel
each option names. Regenerate with

    python -m voicelab.cli.docs_ref > docs/cli.md

(`tests/repo/test_docs.py` renders it and fails when the committed page differs).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path, PurePath
from typing import Any

REGENERATE = "python -m voicelab.cli.docs_ref > docs/cli.md"
PROG = "voicelab"
REPO = Path(__file__).resolve().parents[2]  # defaults inside the checkout are shown relative to it
TYPE_WORDS = {"str": "text", "int": "integer", "float": "number", "bool": "flag", "path": "path", "Path": "path",
              "file": "file", "directory": "folder"}
_CODE = re.compile(r"(`[^`]*`)")


def _escape(text: str, cell: bool = False) -> str:
    """Markdown-safe text: '<' outside code spans escaped (no stray HTML comments); in a table cell, pipes and
    newlines too."""
    parts = _CODE.split(text)
    out = "".join(p if p.startswith("`") and p.endswith("`") and len(p) > 1 else p.replace("<", "&lt;")
                  for p in parts)
    if cell:
        out = " ".join(out.replace("|", "\\|").split())
    return out


def _panel(obj: Any) -> str | None:
    p = getattr(obj, "rich_help_panel", None)
    return p if isinstance(p, str) and p else None


def _type(param: Any, ctx: Any) -> str:
    raw = param.display_type(ctx).strip("<>")
    multi = raw.startswith("list[") and raw.endswith("]")
    base = raw[5:-1] if multi else raw
    word = " or ".join(f"`{c}`" for c in base.split("|")) if "|" in base else TYPE_WORDS.get(base, base)
    if param.param_type_name == "option" and getattr(param, "is_flag", False):
        return "flag"
    if multi:
        return f"{word}, repeatable" if param.param_type_name == "option" else f"{word}, one or more"
    return word


def _default(param: Any) -> str:
    if param.required:
        return "required"
    d = param.default
    if callable(d):
        return "(computed)"
    if d is None or d == [] or d == ():
        return ""
    if getattr(param, "is_flag", False) and isinstance(d, bool):
        if param.secondary_opts:
            return f"`{param.opts[0] if d else param.secondary_opts[0]}`"
        return "on" if d else "off"
    if isinstance(d, Enum):
        d = d.value
    if isinstance(d, PurePath):
        p = Path(d)
        d = p.relative_to(REPO).as_posix() if p.is_absolute() and p.is_relative_to(REPO) else p.as_posix()
    if isinstance(d, list | tuple):
        return ", ".join(f"`{x}`" for x in d)
    return f"`{d}`"


def _name(param: Any) -> str:
    if param.param_type_name == "argument":
        return f"`{param.name.upper()}{'...' if param.nargs != 1 else ''}`"
    return " / ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])


def _params_table(params: list[Any], ctx: Any) -> list[str]:
    lines = ["| name | type | default | help |", "|---|---|---|---|"]
    for p in params:
        lines.append(f"| {_name(p)} | {_escape(_type(p, ctx), cell=True)} | {_default(p)} | "
                     f"{_escape(p.help or '', cell=True)} |")
    return lines


def _walk(cmd: Any, path: list[str], parent: Any) -> Iterator[tuple[list[str], Any, Any]]:
    """(name path, command, context) for this command and every visible subcommand, depth first."""
    import typer._click as click_vendored  # typer's own click: the context class its commands expect

    ctx = click_vendored.Context(cmd, info_name=path[-1], parent=parent)
    yield path, cmd, ctx
    for name in getattr(cmd, "commands", {}) and cmd.list_commands(ctx):
        sub = cmd.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            yield from _walk(sub, [*path, name], ctx)


def _usage(path: list[str], cmd: Any) -> str:
    args = " ".join(f"{p.name.upper()}{'...' if p.nargs != 1 else ''}" if p.required
                    else f"[{p.name.upper()}{'...' if p.nargs != 1 else ''}]"
                    for p in cmd.params if p.param_type_name == "argument")
    sub = " COMMAND [ARGS]..." if getattr(cmd, "commands", None) else ""
    opts = " [OPTIONS]" if any(p.param_type_name == "option" and not p.hidden for p in cmd.params) else ""
    return " ".join(path) + opts + (f" {args}" if args else "") + sub


def _section(path: list[str], cmd: Any, ctx: Any) -> list[str]:
    title = " ".join(path)
    lines = [f"## {title}", "", _escape((cmd.help or "").strip()), "", f"Usage: `{_usage(path, cmd)}`", ""]
    if getattr(cmd, "commands", None):
        lines += ["| command | what it does |", "|---|---|"]
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                first = (sub.help or "").strip().split("\n\n")[0]
                lines.append(f"| [{name}](#{_slug(f'{title} {name}')}) | {_escape(first, cell=True)} |")
        lines.append("")
    params = [p for p in cmd.params if not p.hidden]
    panels: dict[str | None, list[Any]] = {}
    for p in params:
        panels.setdefault(_panel(p), []).append(p)
    for panel, ps in panels.items():
        if panel is not None:
            lines += [f"**{_escape(panel)}**", ""]
        lines += _params_table(ps, ctx) + [""]
    if cmd.epilog:
        lines += [_escape(cmd.epilog.strip()), ""]
    return lines


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def render() -> str:
    """The whole of docs/cli.md."""
    from typer.main import get_command

    from voicelab.cli.app import app

    root = get_command(app)
    sections = list(_walk(root, [PROG], None))
    lines = ["# Command line reference", "",
             "Generated from the typer app (`voicelab/cli/app.py`): do not edit by hand. Regenerate with "
             f"`{REGENERATE}`; `tests/repo/test_docs.py` fails when this page and the commands differ. Every "
             "command's `--help` says the same.", ""]
    for path, _cmd, _ctx in sections[1:]:
        indent = "  " * (len(path) - 2)
        lines.append(f"{indent}- [{' '.join(path)}](#{_slug(' '.join(path))})")
    lines.append("")
    for path, cmd, ctx in sections:
        lines += _section(path, cmd, ctx)
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> None:
    """Print docs/cli.md to stdout."""
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
