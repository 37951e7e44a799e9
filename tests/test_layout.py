"""The architecture, checked: engines/ never imports voicelab, no import loops, few imports inside functions.

Read from the source with `ast`, so a cycle that Python happens to tolerate (a late import) still shows.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LOCAL_IMPORTS = 20  # issue 9: imports made inside functions, in all of voicelab/


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


def _top_level_imports(tree: ast.Module, here: str, modules: set[str]) -> set[str]:
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(_imported(node, here, modules))
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks are not imports at run time
            continue
    return out


def _local_imports(tree: ast.Module) -> int:
    count = 0
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            count += sum(1 for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return count


def test_engines_never_import_voicelab() -> None:
    for mod, tree in _sources("engines").items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                assert not any(m.startswith("voicelab") for m in _imported(node, mod)), mod


def test_no_import_loops() -> None:
    sources = {**_sources("voicelab"), **_sources("engines")}
    names = set(sources)
    graph = {m: {i for i in _top_level_imports(t, m, names) if i in sources and i != m} for m, t in sources.items()}
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
    counts = {m: _local_imports(t) for m, t in _sources("voicelab").items()}
    total = sum(counts.values())
    assert total <= MAX_LOCAL_IMPORTS, {m: c for m, c in counts.items() if c}
