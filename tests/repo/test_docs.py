"""The documentation holds nothing a clone cannot resolve, and its figures and command reference are generated:

- every text file of the repository (`git ls-files`, tracked or new and not ignored) is free of references
  to the private work area outside the repository, to the design-notes file there, of issue numbers and of
  numbered work periods;
- every backticked repository path and every relative Markdown link of the *.md files names a file or
  folder a clone has (placeholders such as `voicelab/rules/NAME.py` must match at least one);
- docs/results.md and the README's table between the results markers regenerate from `docs/runs/`
  unchanged, and docs/cli.md from the typer app.

Each check reports every violation as file:line, not just the first.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from voicelab.analysis import results_md
from voicelab.cli import docs_ref

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = (".md", ".py", ".ipynb", ".toml", ".sh", ".txt")
MAX_BYTES = 2_000_000  # bigger files are data, not prose
TOP_FOLDERS = ("voicelab", "engines", "docs", "tests", "benchmarks", "audio_fixtures", "notebooks", "scripts",
               "examples", ".ci")

# written so that this file does not match itself
FORBIDDEN = [
    (re.compile(r"\.\./(\.\./)*shared\b|/work/[s]hared\b"), "a path to the work area outside the repository"),
    (re.compile(r"\bDESIGN\.md\b"), "the design-notes file (not in the repository)"),
    (re.compile(r"\b[Ii]ssues? #?\d+"), "an issue number"),
    (re.compile(r"(?<![\w&/\"':#])#\d{1,5}\b(?![\w-])"), "an issue reference (#N)"),
    (re.compile(r"(?<![-\w])[Ss]essions? \d+\b"), "a numbered work period"),
]
BACKTICK = re.compile(r"(?<!`)`([^`\s]+)`(?!`)")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
SUFFIX = re.compile(r"(::[\w.\[\]-]+|:\d+(?:-\d+)?)$")  # file.py::name, file.py:12
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]+\b")  # NAME, RUN, ID in `audio_fixtures/NAME/fixture.json`


@cache
def repo_files() -> tuple[str, ...]:
    """What a clone holds once the work in progress is committed: tracked files plus new, not ignored ones."""
    try:
        res = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: nothing to compare a clone with")
    return tuple(sorted(f for f in res.stdout.splitlines() if (ROOT / f).is_file()))


@cache
def repo_paths() -> frozenset[str]:
    """Every file and every folder above one, as repository-relative posix paths."""
    out: set[str] = set()
    for f in repo_files():
        parts = f.split("/")
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(out)


def text_files() -> list[str]:
    return [f for f in repo_files()
            if (f.endswith(TEXT_SUFFIXES) or (f.startswith("docs/") and f.endswith(".json")))
            and (ROOT / f).stat().st_size <= MAX_BYTES]


def read(f: str) -> list[str]:
    return (ROOT / f).read_text(encoding="utf-8", errors="replace").splitlines()


def prose_lines(f: str) -> list[tuple[int, str]]:
    """(line number, text) of a Markdown file outside fenced code blocks."""
    out, fence = [], None
    for i, line in enumerate(read(f), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            fence = None if fence and m.group(1).startswith(fence) else fence or m.group(1)[:3]
            continue
        if fence is None:
            out.append((i, line))
    return out


def exists(rel: str) -> bool:
    """A repository path, or a placeholder pattern (NAME segments) that matches at least one."""
    rel = rel.rstrip("/")
    if rel in repo_paths():
        return True
    if not PLACEHOLDER.search(rel):
        return False
    pattern = PLACEHOLDER.sub("*", rel)
    return any(fnmatch.fnmatchcase(p, pattern) for p in repo_paths())


def report(violations: list[str]) -> str:
    return f"{len(violations)} violation(s):\n" + "\n".join(violations)


def test_no_private_references() -> None:
    bad = []
    for f in text_files():
        for i, line in enumerate(read(f), 1):
            for pattern, what in FORBIDDEN:
                m = pattern.search(line)
                if m:
                    bad.append(f"{f}:{i}: {what}: {m.group(0)!r}")
    assert not bad, report(bad)


def backticked_paths(f: str) -> list[tuple[int, str]]:
    found = []
    for i, line in prose_lines(f):
        for tok in BACKTICK.findall(line):
            path = SUFFIX.sub("", tok)
            if "/" in path and path.split("/")[0] in TOP_FOLDERS and not re.search(r"[*?{}<>$\[\]=(),]", path):
                found.append((i, path))
    return found


def test_backticked_paths_exist() -> None:
    bad = [f"{f}:{i}: `{p}` is not in the repository"
           for f in text_files() if f.endswith(".md") for i, p in backticked_paths(f) if not exists(p)]
    assert not bad, report(bad)


def links(f: str) -> list[tuple[int, str]]:
    found = []
    for i, line in prose_lines(f):
        bare = re.sub(r"`[^`]*`", "", line)  # no links inside code spans
        found += [(i, t) for t in LINK.findall(bare)]
        m = REF_LINK.match(bare)
        if m:
            found.append((i, m.group(1)))
    return found


def resolve_link(md: str, target: str) -> str | None:
    """The repository path a relative link points at; None for web links, anchors and mail."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
        return None
    path = target.split("#", 1)[0].split("?", 1)[0]
    base = ROOT if path.startswith("/") else (ROOT / md).parent
    full = (base / path.lstrip("/")).resolve()
    try:
        return full.relative_to(ROOT).as_posix() or "."
    except ValueError:
        return f"../{path}"  # outside the repository: never there in a clone


def test_markdown_links_resolve() -> None:
    bad = []
    for f in text_files():
        if not f.endswith(".md"):
            continue
        for i, target in links(f):
            rel = resolve_link(f, target)
            if rel is not None and rel != "." and not exists(rel):
                bad.append(f"{f}:{i}: link ({target}) resolves to {rel}, not in the repository")
    assert not bad, report(bad)


def test_checks_catch_what_they_should() -> None:
    """The patterns themselves: a bad line is found, a fine one is not."""
    flagged = [what for line in ["see issue " "12", "fixed in #" "12.", "S" "ession " "9's runs", "../" "shared/x",
                                 "DESIGN" ".md §4"]
               for pattern, what in FORBIDDEN if pattern.search(line)]
    assert len(flagged) == 5
    fine = ['color="#555"', "a{color:#222;}", "[run](#voicelab-run)", "professions 3", "--max-s" "essions 2",
            "issues with it"]
    assert not [line for line in fine for pattern, _ in FORBIDDEN if pattern.search(line)]
    assert exists("voicelab/rules/NAME.py") and exists("docs/") and not exists("voicelab/nope.py")
    assert resolve_link("docs/metrics.md", "data-schema.md#turns") == "docs/data-schema.md"
    assert resolve_link("docs/metrics.md", "https://example.org/x") is None


# ---- generated pages -----------------------------------------------------------------------------------

def test_results_page_is_generated_from_docs_runs() -> None:
    entries = results_md.find_entries([ROOT / "docs" / "runs"])
    want = results_md.render_results(entries, ROOT / "docs" / "results.md")
    have = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert have == want, f"docs/results.md differs from docs/runs: run `{results_md.COMMAND}`"


def test_readme_table_is_generated_from_docs_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if results_md.BEGIN not in readme:
        return  # no markers: test_readme_has_results_markers says so
    entries = results_md.find_entries([ROOT / "docs" / "runs"])
    rows = results_md.load_headline(ROOT / "docs" / "runs" / results_md.HEADLINE)
    block = results_md.render_headline(rows, entries, ROOT / "docs" / "results.md", ROOT / "README.md")
    assert results_md.replace_block(readme, block) == readme, (
        f"README.md's results table differs from docs/runs: run `{results_md.COMMAND}`")


def test_readme_has_results_markers() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert results_md.BEGIN in readme and results_md.END in readme, (
        f"README.md has no {results_md.BEGIN} ... {results_md.END} block: its headline figures would be typed "
        f"by hand; add the markers and run `{results_md.COMMAND}`")


def test_docs_runs_hold_only_small_summaries() -> None:
    runs = ROOT / "docs" / "runs"
    for p in runs.rglob("*"):
        if p.is_file():
            assert p.name in (results_md.SUMMARY, results_md.META, results_md.HEADLINE), p
            assert p.stat().st_size < 50_000, p


def test_cli_reference_is_generated() -> None:
    have = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert have == docs_ref.render(), f"docs/cli.md differs from the commands: run `{docs_ref.REGENERATE}`"


# ---- `voicelab report --markdown` on synthetic runs ---------------------------------------------------------

def _report_app() -> typer.Typer:
    from voicelab.cli import report as report_cli

    app = typer.Typer()
    app.command("report")(report_cli.report)
    app.command("sweep")(report_cli.sweep)
    return app


def test_markdown_import_results_and_readme_table(tmp_path: Path) -> None:
    """Import two runs, pick a paired headline row, fill a README's block; a second run changes nothing."""
    from voicelab.runs import synthetic

    plain = synthetic.write_run(tmp_path / "r", {"policy": "pinned"}, [synthetic.plain_call()], run_id="p")
    barge = synthetic.write_run(tmp_path / "r", {"policy": "final"}, [synthetic.barge_in_call()], run_id="f")
    docs = tmp_path / "docs"
    runs, out, readme = docs / "runs", docs / "results.md", tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{results_md.BEGIN}\nold typed figures\n{results_md.END}\nafter\n",
                      encoding="utf-8")
    app, cli = _report_app(), CliRunner()
    for run, name in ((plain, "plain"), (barge, "barge")):
        res = cli.invoke(app, ["report", "--markdown", str(runs), "--import", str(run), "--name", name,
                               "--out", str(out)])
        assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (runs / "plain").iterdir()) == ["meta.json", "summary.json"]
    assert (runs / "plain" / "summary.json").read_bytes() == (plain / "summary.json").read_bytes()
    (runs / "headline.json").write_text(json.dumps([
        {"run": "barge", "label": "barge-in", "figures": ["far_p50", "stop_p50", "false_barge_ins"]},
        {"run": ["plain", "barge"], "label": "pinned vs final", "figures": ["far_p50"]}]), encoding="utf-8")
    args = ["report", "--markdown", str(runs), "--out", str(out), "--readme", str(readme)]
    res = cli.invoke(app, args)
    assert res.exit_code == 0, res.output
    page, text = out.read_text(encoding="utf-8"), readme.read_text(encoding="utf-8")
    assert "## plain" in page and "## barge" in page and "[summary.json](runs/plain/summary.json)" in page
    plain_section = page.split("## plain")[1].split("## ")[0]
    assert "| stop latency p50 | not measured |" in plain_section  # no barge-in in that call: never 0
    assert "old typed figures" not in text and text.startswith("# x\n\nbefore\n") and text.endswith("after\n")
    row = next(line for line in text.splitlines() if line.startswith("| pinned vs final"))
    assert " vs " in row.split("|")[3]  # figure | A vs B
    runs_line = text.splitlines()[text.splitlines().index(row) + 1]
    assert "(docs/results.md#plain)" in runs_line and "(docs/results.md#barge)" in runs_line
    assert cli.invoke(app, args).exit_code == 0 and readme.read_text(encoding="utf-8") == text


def test_markdown_leaves_a_readme_without_markers_and_refuses_bad_input(tmp_path: Path) -> None:
    from voicelab.runs import synthetic

    run = synthetic.write_run(tmp_path / "r", calls=[synthetic.plain_call()], run_id="p")
    runs, readme = tmp_path / "runs", tmp_path / "README.md"
    readme.write_text("no markers\n", encoding="utf-8")
    app, cli = _report_app(), CliRunner()
    res = cli.invoke(app, ["report", "--markdown", str(runs), "--import", str(run), "--name", "p",
                           "--out", str(tmp_path / "results.md")])
    assert res.exit_code == 0, res.output
    (runs / "headline.json").write_text(json.dumps([{"run": "p", "figures": ["far_p51"]}]), encoding="utf-8")
    res = cli.invoke(app, ["report", "--markdown", str(runs), "--out", str(tmp_path / "results.md"),
                           "--readme", str(readme)])
    assert res.exit_code == 2 and "far_p51" in res.output and res.output.strip().count("\n") == 0
    (runs / "headline.json").write_text(json.dumps([{"run": "p"}]), encoding="utf-8")
    res = cli.invoke(app, ["report", "--markdown", str(runs), "--out", str(tmp_path / "results.md"),
                           "--readme", str(readme)])
    assert res.exit_code == 0 and "left alone" in res.output and readme.read_text(encoding="utf-8") == "no markers\n"
    for bad in (["--import", str(run), "--name", "Bad Name"], ["--import", str(run)], ["--name", "x"]):
        res = cli.invoke(app, ["report", "--markdown", str(runs), *bad])
        assert res.exit_code == 2 and "error:" in res.output, bad
    res = cli.invoke(app, ["report", str(run), "--readme", str(readme)])
    assert res.exit_code == 2 and "--markdown" in res.output


def test_share_intervals_match_the_metrics_module() -> None:
    from voicelab.measure.intervals import proportion_stats

    for k, n in ((1, 1), (3, 4), (0, 7), (19, 20)):
        assert [round(x, 3) for x in results_md.wilson(k, n)] == proportion_stats(k, n)["rate_ci"]
