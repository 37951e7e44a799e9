"""The architecture, checked from the source with `ast` (so a cycle Python happens to tolerate still shows):

- engines/ never imports voicelab; its subpackages import only what `docs/architecture.md` allows;
- voicelab imports only the engine contract, the registry, the shop, the timing profiles and the decision model
  (the command line may also reach the engine tools it runs: evaluation, training, the mock server);
- no import loop; few imports inside functions; no function body over 80 lines;
- the layout table names every subpackage and every path it names exists;
- the command line starts without torch, pipecat, onnxruntime or ctranslate2.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LOCAL_IMPORTS_VOICELAB = 20  # imports made inside functions, in voicelab/ outside cli/
MAX_LOCAL_IMPORTS_ENGINES = 27  # the registry and eval/ import subpackages lazily, inside their factories
MAX_BODY_LINES = 80
LAYOUT_DOC = ROOT / "docs" / "architecture.md"

CONTRACT = {"engines", "engines.protocol", "engines.snapshot", "engines.errors", "engines.text_canvas",
            "engines.trace", "engines.tool_span"}
# engines group -> the groups it may import (itself always)
ENGINE_RULES = {
    "contract": {"contract"},
    "hosted": {"contract"},
    "shop": {"contract"},
    "local": {"contract"},
    "simulated": {"contract", "hosted", "local"},
    "decision": {"contract", "local", "shop"},
    "registry": {"contract", "local", "hosted", "simulated", "shop", "decision", "eval"},
    "eval": {"contract", "registry", "local", "hosted", "simulated", "shop", "decision"},
}
LOCAL_TRAINING_MAY_IMPORT = {"shop"}  # engines.local.train reads the shop's corpus
REGISTRY_TOP_LEVEL = {"contract", "engines.simulated.profiles"}  # the rest only inside factories
VOICELAB_MAY_IMPORT = {"contract", "registry", "shop", "decision"}
VOICELAB_MAY_IMPORT_MODULES = {"engines.simulated.profiles"}
CLI_MAY_ALSO_IMPORT = {"eval", "engines.local.train", "engines.simulated.mock_server"}
HEAVY = ("torch", "pipecat", "onnxruntime", "ctranslate2")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(pkg: str) -> dict[str, ast.Module]:
    return {_module(p): ast.parse(p.read_text(encoding="utf-8")) for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imported(node: ast.Import | ast.ImportFrom, here: str, modules: set[str] | None = None) -> list[str]:
    """What an import statement loads: `from pkg import sub` loads pkg.sub (a module) or pkg (a name)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # relative: resolve against this module's package
        pkg = here.split(".")[: -node.level]
        base = ".".join([*pkg, base]) if base else ".".join(pkg)
    subs = [f"{base}.{a.name}" for a in node.names]
    if modules is not None and all(s in modules for s in subs):
        return subs
    return [base, *subs]


def _imports(tree: ast.Module, here: str, modules: set[str], top_level_only: bool) -> set[str]:
    """Modules of `modules` that a file imports (top level only: what runs at import time)."""
    out: set[str] = set()
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(m for m in _imported(node, here, modules) if m in modules)
    return out


def _group(mod: str) -> str:
    """engines.local.engine -> local; engines.registry -> registry; engines.protocol -> contract."""
    if mod in CONTRACT:
        return "contract"
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "registry" else "registry"


def _local_imports(tree: ast.Module) -> int:
    """Import statements inside any function (each counted once, however deeply nested)."""
    count = 0

    def visit(node: ast.AST, in_function: bool) -> None:
        nonlocal count
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                count += 1
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return count


ENGINES = _sources("engines")
VOICELAB = _sources("voicelab")
ALL = {**ENGINES, **VOICELAB}


def test_engines_never_import_voicelab() -> None:
    for mod, tree in ENGINES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                assert not any(m.startswith("voicelab") for m in _imported(node, mod)), mod


def test_engines_top_level_holds_only_the_contract_and_the_registry() -> None:
    top = {_module(p) for p in (ROOT / "engines").glob("*.py")}
    assert top == CONTRACT | {"engines.registry"}, sorted(top - CONTRACT)
    assert {_group(m) for m in ENGINES} == set(ENGINE_RULES), "a subpackage missing from ENGINE_RULES"


def test_engines_subpackages_import_only_what_they_may() -> None:
    names = set(ENGINES)
    bad = []
    for mod, tree in ENGINES.items():
        g = _group(mod)
        allowed = ENGINE_RULES[g] | {g}
        if mod == "engines.local.train":
            allowed = allowed | LOCAL_TRAINING_MAY_IMPORT
        bad += [f"{mod} -> {i}" for i in _imports(tree, mod, names, top_level_only=False) if _group(i) not in allowed]
        if g == "registry":
            bad += [f"{mod} -> {i} (at import time)" for i in _imports(tree, mod, names, top_level_only=True)
                    if _group(i) != "contract" and i not in REGISTRY_TOP_LEVEL]
    assert not bad, bad


def test_voicelab_imports_only_the_engines_it_may() -> None:
    names = set(ENGINES)
    bad = []
    for mod, tree in VOICELAB.items():
        for i in _imports(tree, mod, names, top_level_only=False):
            ok = _group(i) in VOICELAB_MAY_IMPORT or i in VOICELAB_MAY_IMPORT_MODULES
            if mod.startswith("voicelab.cli"):
                ok = ok or _group(i) in CLI_MAY_ALSO_IMPORT or i in CLI_MAY_ALSO_IMPORT
            if not ok:
                bad.append(f"{mod} -> {i}")
    assert not bad, bad


def test_no_turn_taking_rule_in_engines() -> None:
    words = re.compile(r"\b(decide_turn|decide_interruption|required_silence_ms|words_reliable|TurnThresholds)\b")
    hits = [m for m, tree in ENGINES.items() if words.search(ast.unparse(tree))]
    assert not hits, hits


def test_no_import_loops() -> None:
    names = set(ALL)
    graph = {m: {i for i in _imports(t, m, names, top_level_only=True) if i != m} for m, t in ALL.items()}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                loop = stack[stack.index(n):] + [n] if n in stack else [m, n]
                raise AssertionError("import loop: " + " -> ".join(loop))
            if n not in state:
                visit(n, [*stack, n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_few_imports_inside_functions() -> None:
    voicelab = {m: _local_imports(t) for m, t in VOICELAB.items() if not m.startswith("voicelab.cli")}
    engines = {m: _local_imports(t) for m, t in ENGINES.items()}
    assert sum(voicelab.values()) <= MAX_LOCAL_IMPORTS_VOICELAB, {m: c for m, c in voicelab.items() if c}
    assert sum(engines.values()) <= MAX_LOCAL_IMPORTS_ENGINES, {m: c for m, c in engines.items() if c}


def test_local_import_count_is_per_statement() -> None:
    tree = ast.parse("def f():\n    import os\n    def g():\n        import sys\n")
    assert _local_imports(tree) == 2


def test_no_function_body_over_80_lines() -> None:
    """From the first statement of the body to its end (a signature of typer options does not count)."""
    long = []
    for mod, tree in ALL.items():
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (fn.end_lineno or fn.lineno) - fn.body[0].lineno + 1
                if n > MAX_BODY_LINES:
                    long.append(f"{mod}.{fn.name}: {n} lines")
    assert not long, long


def _layout_rows() -> list[str]:
    text = LAYOUT_DOC.read_text(encoding="utf-8")
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_layout_table_paths_exist_and_name_every_subpackage() -> None:
    rows = _layout_rows()
    assert rows, f"{LAYOUT_DOC}: no layout table"
    named = [p for row in rows for p in re.findall(r"`([\w./-]+)`", row)]
    missing = [p for p in named if "/" in p and not (ROOT / p).exists()]
    assert not missing, missing
    folders = {p.rstrip("/") for p in named if p.endswith("/")}
    packages = {str(p.parent.relative_to(ROOT)) for pkg in ("voicelab", "engines")
                for p in (ROOT / pkg).rglob("__init__.py")}
    unnamed = sorted(packages - folders)
    assert not unnamed, f"subpackages not in the layout table of {LAYOUT_DOC.name}: {unnamed}"


def test_cli_starts_without_heavy_libraries() -> None:
    code = ("import sys, voicelab.cli.app; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", f"importing the CLI loaded {out.stdout.strip()}"


def test_cli_copies_of_constants_match_their_homes() -> None:
    """The CLI keeps a few defaults of its own so that it starts light; they must not drift."""
    from engines.local.samplers import SAMPLERS
    from engines.registry import SAMPLER_NAMES
    from voicelab.cli import compare, report, stt_bench
    from voicelab.measure.intervals import RESAMPLES
    from voicelab.runs.sweep import RUNNERS
    from voicelab.speech.recogniser_bench import GROUPS, SYSTEMS

    assert compare.RESAMPLES == RESAMPLES
    assert stt_bench.SYSTEMS == SYSTEMS and stt_bench.GROUPS == GROUPS
    assert set(report.RUNNERS) == set(RUNNERS)
    assert set(SAMPLER_NAMES) == set(SAMPLERS)
