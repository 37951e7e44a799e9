"""The architecture, checked from the source with `ast` (so a cycle Python happens to tolerate still shows):

- engines/ never imports voicelab; its subpackages import only what `docs/architecture.md` allows;
- voicelab imports only the engine contract, the registry, the shop, the timing profiles and the decision model
  (the command line may also reach the engine tools it runs: evaluation, training, the mock server);
- voicelab/pipeline/ imports nothing built on it; voicelab/analysis/ imports nothing of voicelab/runs/;
- benchmarks/ import voicelab, engines and each other, and nothing imports them;
- no import loop, counting every import (inside functions and for typing too); voicelab's layers (`LAYERS`):
  no import from a lower layer to a higher one; few imports inside functions; no function body over 80 lines;
- pipecat transports only in voicelab/pipeline/transport/; no class name defined in two modules;
- the layout table names every subpackage and every module, and every path the page names exists;
- every adapter of the step table loads pipecat, and the pure logic it wraps loads neither pipecat nor torch;
- the command line starts without torch, pipecat, onnxruntime or ctranslate2.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from fnmatch import fnmatch
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
PIPELINE_NEVER_IMPORTS = ("call", "web", "runs", "analysis", "cli", "turnbench")  # the packages built on it
TRANSPORTS = "voicelab.pipeline.transport"
ADAPTER_ROLES = ("processor", "strategy", "wrappers", "replies")  # RULE_ROLE.py: the pipecat adapter of RULE


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
BENCHMARKS = _sources("benchmarks")  # scripts: `benchmarks.NAME` here, imported by each other as `NAME`
EVERYTHING = {**ALL, **BENCHMARKS}


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


# voicelab's layers, lowest first: a module imports only from its own package, or from a package of a lower layer
# (never a higher one, never another package of its own layer), at module level, inside functions or for typing.
# A module's layer is that of the longest name here it is or lies under ("voicelab" itself names only the package).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("voicelab", "voicelab.gate", "voicelab.pcm", "voicelab.cpu_threads"),  # the gate, the sample rate, threads
    ("voicelab.speech",),  # recognisers without pipecat
    ("voicelab.measure",),  # events, the call clock, the figures
    ("voicelab.runs.folder",),  # the run folder's format: written by runs, web and call, read by fixtures import
    ("voicelab.rules", "voicelab.fixtures"),  # pure rules; the fixture format and its tools
    ("voicelab.pipeline",),
    ("voicelab.analysis",),  # tables, report, compare: read run folders
    ("voicelab.runs",),  # voicelab run and sweeps: write them
    ("voicelab.turnbench", "voicelab.sttbench"),  # the benches
    ("voicelab.call", "voicelab.web"),  # the lab as a phone carrier; the live demo
    ("voicelab.cli",),
)


def _import_graph(sources: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Every first-party module each module imports, anywhere in it: at module level, inside functions, under
    `if TYPE_CHECKING` (`from pkg import name` counts as importing pkg)."""
    names = set(sources)
    return {m: {i for node, _ in _import_nodes(t) for i in _imported(node, m, names) if i in names and i != m}
            for m, t in sources.items()}


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop through each strongly connected set of modules (Tarjan), as the modules in import order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(comp) > 1:
                found.append(_loop_through(graph, set(comp), min(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _loop_through(graph: dict[str, set[str]], comp: set[str], start: str) -> list[str]:
    """A path from `start` back to itself inside `comp` (breadth first: a shortest one)."""
    paths = {start: [start]}
    todo = [start]
    while todo:
        m = todo.pop(0)
        for n in sorted(graph[m] & comp):
            if n == start:
                return [*paths[m], start]
            if n not in paths:
                paths[n] = [*paths[m], n]
                todo.append(n)
    raise AssertionError(f"no loop through {start}")  # a strongly connected set always has one


def _layer(mod: str) -> int | None:
    """The index in LAYERS of the longest name `mod` is or lies under; None when none is named."""
    best: tuple[int, int] | None = None
    for i, layer in enumerate(LAYERS):
        for name in layer:
            if mod == name or (name != "voicelab" and mod.startswith(name + ".")):
                if best is None or len(name) > best[0]:
                    best = (len(name), i)
    return None if best is None else best[1]


def _package(mod: str) -> str:
    """The LAYERS name a module lies under (the longest)."""
    return max((n for layer in LAYERS for n in layer if mod == n or (n != "voicelab" and mod.startswith(n + "."))),
               key=len)


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Imports of voicelab modules from a higher layer, or from another package of the same layer."""
    bad = []
    for m, targets in sorted(graph.items()):
        here = _layer(m)
        for t in sorted(targets):
            there = _layer(t)
            if here is None or there is None:
                continue
            if there > here or (there == here and _package(t) != _package(m)):
                bad.append(f"{m} (layer {here}) -> {t} (layer {there})")
    return bad


def test_no_import_loops() -> None:
    """Over voicelab and engines, counting every import (inside functions and for typing too): none loops back."""
    loops = _loops(_import_graph(ALL))
    assert not loops, ["import loop: " + " -> ".join(loop) for loop in loops]


def test_every_voicelab_module_has_a_layer() -> None:
    unplaced = sorted(m for m in VOICELAB if _layer(m) is None)
    assert not unplaced, f"modules under no name of LAYERS: {unplaced}"


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    bad = _upward({m: ts for m, ts in _import_graph(ALL).items() if m in VOICELAB})
    assert not bad, bad


def test_the_graph_checks_find_a_loop_and_an_arrow_up() -> None:
    """The checks on a made-up graph: a loop of three found whole, an import inside a function counted."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _loops(graph) == [["a", "b", "c", "a"]]
    tree = ast.parse("def f():\n    from voicelab.cli import app\n")
    up = _import_graph({"voicelab.speech.x": tree, "voicelab.cli": ast.parse("")})
    assert up["voicelab.speech.x"] == {"voicelab.cli"}
    assert _upward(up) == ["voicelab.speech.x (layer 1) -> voicelab.cli (layer 10)"]
    assert _upward({"voicelab.turnbench.x": {"voicelab.sttbench"}}) == \
        ["voicelab.turnbench.x (layer 8) -> voicelab.sttbench (layer 8)"]


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
    from voicelab.sttbench.recogniser_bench import GROUPS, SYSTEMS

    assert compare.RESAMPLES == RESAMPLES
    assert stt_bench.SYSTEMS == SYSTEMS and stt_bench.GROUPS == GROUPS
    assert set(report.RUNNERS) == set(RUNNERS)
    assert set(SAMPLER_NAMES) == set(SAMPLERS)


# ---- benchmarks, the packages' own layers, transports, class names --------------------------------------------

def _import_nodes(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str | None]]:
    """Every import statement with the name of the function it is made in (None: at module level)."""
    out: list[tuple[ast.Import | ast.ImportFrom, str | None]] = []

    def visit(node: ast.AST, fn: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, fn))
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn
            visit(child, inner)

    visit(tree, None)
    return out


def _bench_name(name: str) -> str:
    """A benchmark's bare import of another (`from stt_compare import ...`, with benchmarks/ on sys.path)."""
    return f"benchmarks.{name}" if f"benchmarks.{name}" in BENCHMARKS else name


def _targets(node: ast.Import | ast.ImportFrom, here: str) -> list[str]:
    """The modules an import statement names, benchmarks' bare names resolved (`from a.b import c` -> a.b)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.level:
        names = [_imported(node, here)[0]]
    else:
        names = [node.module or ""]
    return [_bench_name(n) if here.startswith("benchmarks.") else n for n in names]


def _loaded(tree: ast.Module, here: str) -> set[str]:
    """What importing the module runs: every import outside functions (in try, if and class bodies too, not under
    `if TYPE_CHECKING`), with the packages above each first-party module it names."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(ast.Module(body=child.orelse, type_ignores=[]))
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found = _imported(child, here, set(EVERYTHING)) if isinstance(child, ast.ImportFrom) else \
                    [a.name for a in child.names]
                out.update(_bench_name(m) if here.startswith("benchmarks.") else m for m in found)
            visit(child)

    visit(tree)
    for mod in [m for m in out if m in EVERYTHING]:
        parts = mod.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return out


def _loads_at_import(mod: str) -> set[str]:
    """Every module importing `mod` loads: first-party ones followed, third-party ones by their top name."""
    seen, todo, outside = set(), [mod], set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for n in _loaded(EVERYTHING[m], m):
            if n in EVERYTHING:
                todo.append(n)
            elif n.split(".")[0] not in ("voicelab", "engines", "benchmarks"):
                outside.add(n.split(".")[0])
    return seen | outside


def _section(title: str) -> str:
    text = LAYOUT_DOC.read_text(encoding="utf-8")
    assert f"\n## {title}\n" in text, f"{LAYOUT_DOC.name}: no section '{title}'"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`\s]+)`", cell)


def _path_exists(rel: str) -> bool:
    """A repository path, or a pattern (`*`, or a NAME placeholder segment) that matches one."""
    rel = rel.rstrip("/")
    if (ROOT / rel).exists():
        return True
    pattern = re.sub(r"\b[A-Z][A-Z0-9_]+\b", "*", rel)
    return pattern != rel and any(True for _ in ROOT.glob(pattern))


TOPS = ("voicelab/", "engines/", "benchmarks/", "tests/", "docs/", "notebooks/", "audio_fixtures/")


def _module_files() -> set[str]:
    return {str(p.relative_to(ROOT)) for pkg in ("voicelab", "engines", "benchmarks")
            for p in (ROOT / pkg).rglob("*.py") if p.name != "__init__.py"}


def test_layout_table_names_every_module() -> None:
    """Each row's cell names the modules of its folder, by bare name (`gate.py`) or by path."""
    named: set[str] = set()
    wrong: list[str] = []
    for row in _layout_rows():
        folder, *rest = _cells(row)
        base = folder.strip("`").rstrip("/")
        for tok in _ticked(" ".join(rest)):
            path = tok if tok.startswith(TOPS) else f"{base}/{tok}" if "/" not in tok and tok.endswith(".py") else None
            if path is None:
                continue
            if not _path_exists(path):
                wrong.append(f"{folder}: `{tok}` ({path})")
            named.add(path)
    assert not wrong, f"the layout table of {LAYOUT_DOC.name} names modules that are not there: {wrong}"
    unnamed = sorted(_module_files() - named)
    assert not unnamed, f"modules not in the layout table of {LAYOUT_DOC.name}: {unnamed}"


def test_every_path_the_page_names_exists() -> None:
    """Outside the layout table (whose bare names are its folders'), a bare `NAME.py` must be some module's name."""
    text = LAYOUT_DOC.read_text(encoding="utf-8")
    layout = _section("Layout")
    rest = text.replace(layout, "")
    names = {p.name for pkg in ("voicelab", "engines", "benchmarks", "tests") for p in (ROOT / pkg).rglob("*.py")}
    missing = [t for t in _ticked(rest) if t.startswith(TOPS) and not _path_exists(t)]
    missing += [t for t in _ticked(rest) if "/" not in t and t.endswith(".py")
                and not any(fnmatch(n, t) for n in names)]
    assert not missing, f"{LAYOUT_DOC.name} names what is not there: {missing}"


def _step_rows() -> list[tuple[str, list[str], list[str]]]:
    rows = []
    for line in _section("A frame from microphone to speaker").splitlines():
        if not line.startswith("| ") or line.startswith("| step "):
            continue
        step, adapters, pure = _cells(line)
        rows.append((step, [t for t in _ticked(adapters) if "/" in t], [t for t in _ticked(pure) if "/" in t]))
    return rows


def test_step_table_adapters_load_pipecat_and_wrap_pure_logic() -> None:
    rows = _step_rows()
    assert len(rows) >= 6, f"{LAYOUT_DOC.name}: no step table"
    bad = []
    for step, adapters, pure in rows:
        assert adapters and pure, f"step '{step}': an adapter and the pure logic it wraps"
        reached: set[str] = set()
        for a in adapters:
            if not (ROOT / a).is_file():
                bad.append(f"{step}: adapter {a} is not there")
                continue
            loads = _loads_at_import(_module(ROOT / a))
            reached |= loads
            if "pipecat" not in loads:
                bad.append(f"{step}: {a} is no pipecat adapter (it never loads pipecat)")
        for p in pure:
            if not (ROOT / p).is_file():
                bad.append(f"{step}: pure module {p} is not there")
                continue
            mod = _module(ROOT / p)
            anywhere = {m.split(".")[0] for node, _ in _import_nodes(EVERYTHING[mod]) for m in _targets(node, mod)}
            heavy = ({"pipecat", "torch"} & anywhere) | ({"pipecat", "torch"} & _loads_at_import(mod))
            if heavy:
                bad.append(f"{step}: {p} is not pure: it loads {sorted(heavy)}")
            if mod not in reached:
                bad.append(f"{step}: no adapter of the row loads {p}")
    assert not bad, bad


def test_adapters_named_after_a_rule_import_it() -> None:
    """An adapter named RULE_ROLE imports its rule: `gate_processor.py` voicelab.gate, `turn_end_strategy.py`
    voicelab.rules.turn_end, `faults_wrappers.py` voicelab.rules.faults (other files are named after what they
    hold: `speculative_tts.py` is a TTS service, not the speculative rule's adapter)."""
    rules = {p.stem: _module(p) for p in (ROOT / "voicelab" / "rules").glob("*.py") if p.stem != "__init__"}
    rules["gate"] = "voicelab.gate"
    bad = []
    for mod, tree in VOICELAB.items():
        if not mod.startswith("voicelab.pipeline."):
            continue
        stem = mod.rsplit(".", 1)[1]
        for rule, home in rules.items():
            role = stem.removeprefix(f"{rule}_")
            if role != stem and role in ADAPTER_ROLES and home not in _loaded(tree, mod):
                bad.append(f"{mod} is named after {home} but does not import it")
    assert not bad, bad


def _within(mod: str, packages: tuple[str, ...]) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in packages)


def test_pipeline_imports_nothing_built_on_it() -> None:
    banned = tuple(f"voicelab.{p}" for p in PIPELINE_NEVER_IMPORTS)
    bad = []
    for mod, tree in VOICELAB.items():
        if _within(mod, ("voicelab.pipeline",)):
            for node, _ in _import_nodes(tree):
                names = _imported(node, mod) if isinstance(node, ast.ImportFrom) else _targets(node, mod)
                bad += [f"{mod} -> {t}" for t in names if _within(t, banned)]
    assert not bad, bad


def test_analysis_imports_nothing_of_runs() -> None:
    """voicelab.runs imports the tables when loaded; the tables make the Parquet bytes and the run folder's writer
    writes them, so no way back is needed, not even inside a function."""
    found = sorted(f"{mod} -> {t}" + (f" (in {fn})" if fn else "") for mod, tree in VOICELAB.items()
                   if _within(mod, ("voicelab.analysis",)) for node, fn in _import_nodes(tree)
                   for t in _imported(node, mod) if _within(t, ("voicelab.runs",)))
    assert not found, found


def test_nothing_imports_benchmarks() -> None:
    bad = [f"{mod} -> {t}" for mod, tree in ALL.items() for node, _ in _import_nodes(tree)
           for t in _targets(node, mod) if t.split(".")[0] == "benchmarks" or f"benchmarks.{t}" in BENCHMARKS]
    assert not bad, bad


def test_benchmarks_import_voicelab_engines_and_each_other_only() -> None:
    """First-party imports of a benchmark name modules that exist; a benchmark reads no tests."""
    bad = []
    for mod, tree in BENCHMARKS.items():
        for node, _ in _import_nodes(tree):
            for t in _targets(node, mod):
                top = t.split(".")[0]
                if top == "tests":
                    bad.append(f"{mod} -> {t} (tests)")
                elif top in ("voicelab", "engines", "benchmarks") and t not in EVERYTHING:
                    bad.append(f"{mod} -> {t} (no such module)")
    assert not bad, bad


def test_no_import_loops_through_benchmarks() -> None:
    """Loops inside voicelab and engines are test_no_import_loops'; here, the benchmarks' own."""
    graph = {m: {n for n in _loaded(t, m) if n in BENCHMARKS and n != m} for m, t in BENCHMARKS.items()}
    order: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        order[m] = 1
        for n in sorted(graph[m]):
            if order.get(n) == 1:
                raise AssertionError("import loop: " + " -> ".join([*stack[stack.index(n):], n]))
            if n not in order:
                visit(n, [*stack, n])
        order[m] = 2

    for m in sorted(graph):
        if m not in order:
            visit(m, [m])


def _base_name(base: ast.expr) -> str:
    return base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""


def test_pipecat_transports_only_in_the_transport_folder() -> None:
    """A class whose base is a pipecat transport (a name ending in `Transport`) or one of ours, transitively."""
    classes = [(mod, node) for mod, tree in EVERYTHING.items() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)]
    transports: set[str] = set()
    grew = True
    while grew:
        grew = False
        for _, node in classes:
            if node.name not in transports and any(
                    b.endswith("Transport") or b in transports for b in map(_base_name, node.bases)):
                transports.add(node.name)
                grew = True
    outside = sorted(f"{mod}.{node.name}" for mod, node in classes if node.name in transports
                     and not (mod == TRANSPORTS or mod.startswith(TRANSPORTS + ".")))
    assert not outside, f"pipecat transports outside {TRANSPORTS}: {outside}"
    assert transports, "no transport found: the check reads nothing"


def test_no_class_name_defined_in_two_modules() -> None:
    where: dict[str, set[str]] = {}
    for mod, tree in ALL.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, set()).add(mod)
    twice = {name: sorted(mods) for name, mods in sorted(where.items()) if len(mods) > 1}
    assert not twice, f"class names defined in more than one module: {twice}"
