"""The package's shape: every module imports on its own, and the import graph has no cycle.

The graph is read from the source (every `import` and `from ... import` statement, at module
level or inside a function, so a function-local import cannot hide a cycle), not from a list
of names: a module added tomorrow is covered."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "stimkit"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path) -> set[str]:
    """The stimkit modules `name` imports (a `from package import x` names the submodule x
    when there is one, else the package itself)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "stimkit"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "stimkit":
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in MODULES else module)
    return found - {name}


GRAPH = {name: imports_of(name, path) & set(MODULES) for name, path in MODULES.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path (a -> b -> ... -> a), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_is_read_from_the_source():
    # a few edges every reader of the package knows of: if these are missing, the parser is wrong
    assert "stimkit.run.plan" in GRAPH["stimkit.api"]  # a function-local import counts
    assert "stimkit.store.connection" in GRAPH["stimkit.store"]
    assert "stimkit.stats.sampler" in GRAPH["stimkit.stats.pvalues"]
    assert len(MODULES) > 50


def test_no_module_imports_one_of_its_importers():
    assert find_cycle(GRAPH) is None, " -> ".join(find_cycle(GRAPH))


def test_the_cycle_finder_finds_a_planted_cycle():
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["stimkit.stats.weat"].add("stimkit.api")  # the statistics reaching up to the library face
    cycle = find_cycle(planted)
    assert cycle and cycle[0] == cycle[-1] and "stimkit.api" in cycle


def test_lower_layers_never_import_upper_ones():
    """The layers of the README's drawing: statistics, the store, stimuli and encoders know
    nothing of runs, studies, the library face or the CLI."""
    upper = ("stimkit.run", "stimkit.study", "stimkit.api", "stimkit.cli", "stimkit.analysis", "stimkit.report")
    for name, deps in GRAPH.items():
        if name.startswith(("stimkit.stats", "stimkit.store", "stimkit.stimuli", "stimkit.encoders", "stimkit.catalog")):
            assert not {d for d in deps if d.startswith(upper)}, (name, deps)


def _import_alone(name: str) -> tuple[str, int, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=120)
    return name, proc.returncode, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""


@pytest.mark.parametrize("chunk", range(4))
def test_every_module_imports_on_its_own(chunk):
    """Each module in a fresh interpreter: one that works only when another was imported
    first (an import order accident) fails here."""
    names = [n for n in MODULES if not n.endswith("__main__")][chunk::4]
    with ThreadPoolExecutor(2) as pool:
        failed = [(n, err) for n, code, err in pool.map(_import_alone, names) if code]
    assert not failed, failed


def test_the_views_layer_renders_for_the_cli_and_the_report_and_nothing_below():
    """One rendering path (stimkit/views/): the CLI and the report import it; the run layer,
    the library face and everything below them never do (they return data)."""
    importers = {n for n, deps in GRAPH.items() if not n.startswith("stimkit.views")
                 and any(d.startswith("stimkit.views") for d in deps)}
    assert any(n.startswith("stimkit.cli") for n in importers), importers
    assert any(n.startswith("stimkit.report") for n in importers), importers
    assert all(n.startswith(("stimkit.cli", "stimkit.report")) for n in importers), importers
    for name, deps in GRAPH.items():
        if name.startswith("stimkit.views"):
            assert not {d for d in deps if d.startswith(("stimkit.cli", "stimkit.report", "stimkit.api", "stimkit.run"))}, \
                (name, deps)


# the layers that return data: every table they hold is rendered above them, by stimkit/views
DATA_LAYERS = ("stimkit.analysis", "stimkit.run", "stimkit.api", "stimkit.study", "stimkit.stats", "stimkit.store",
               "stimkit.stimuli", "stimkit.encoders", "stimkit.catalog")


def renderers_below_the_views(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The modules of the data layers that import the views layer, with what they import of it."""
    return {name: found for name, deps in graph.items() if name.startswith(DATA_LAYERS)
            and (found := {d for d in deps if d.startswith("stimkit.views")})}


def test_no_layer_that_returns_data_formats_a_table():
    """analysis/, run/, api.py and what lies below them import nothing of the views layer (its
    writer included: stimkit/views/emit.py is the only output layer), and the modules that once
    rendered tables there are gone: Table 4, Tables 7-8, the paper tables, captions and marks
    live in stimkit/views."""
    assert renderers_below_the_views(GRAPH) == {}
    assert not {"stimkit.output", "stimkit.analysis.paper_tables", "stimkit.analysis.tables"} & set(MODULES)
    # the views render every table the CLI and the report print: run, results (plain, --table,
    # --layout tan-celis), check, the report's Table 4 files, LaTeX and Markdown
    for view in ("emit", "text", "paper", "results", "table4", "tancelis", "check"):
        assert f"stimkit.views.{view}" in MODULES, view
    assert {"stimkit.views.results", "stimkit.views.table4", "stimkit.views.tancelis", "stimkit.views.check"} <= \
        set().union(*(GRAPH[n] for n in MODULES if n.startswith("stimkit.cli")))
    assert {"stimkit.views.table4", "stimkit.views.results"} <= GRAPH["stimkit.report.build"]


def test_the_planted_table_in_the_analysis_layer_is_caught():
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["stimkit.analysis.families"].add("stimkit.views.table4")
    planted["stimkit.api"].add("stimkit.views.emit")
    assert renderers_below_the_views(planted) == {"stimkit.analysis.families": {"stimkit.views.table4"},
                                                  "stimkit.api": {"stimkit.views.emit"}}
