"""The import rules of pyproject.toml ([tool.importlinter]) hold, and they are not vacuous: the same
contracts, run over a copy of the code with one forbidden import added, fail."""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("evaluation", "jobrows", "court", "inference", "verification", "config")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_hold():
    done = lint_imports(REPO)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_import_that_breaks_a_contract_fails_the_check(tmp_path):
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "evaluation" / "harness" / "scoring.py", "a") as scoring:
        scoring.write("\nimport torch  # the parent side, importing torch\n")
    with open(tmp_path / "evaluation" / "harness" / "limits.py", "a") as limits:
        limits.write("\nfrom court import models  # the harness, importing the site\n")

    done = lint_imports(tmp_path)

    assert done.returncode != 0
    assert "The harness's parent side (standard library only) never imports torch BROKEN" in done.stdout, done.stdout
    assert "The harness is standalone: it never imports Django or the site BROKEN" in done.stdout, done.stdout


def test_every_module_outside_the_sandboxed_side_is_held_to_the_parents_rules():
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    parent_rules = [c for c in contracts if c["name"].startswith("The harness's parent side")]
    harness = REPO / "evaluation" / "harness"
    parent_side = {f"evaluation.harness.{path.stem}" for path in harness.glob("*.py") if path.stem != "__init__"}

    assert len(parent_rules) == 2
    for contract in parent_rules:
        assert set(contract["source_modules"]) == parent_side, contract["name"]
    assert (harness / "sandboxed" / "candidate_process.py").exists()


def test_no_module_imports_itself_back():
    """No circle through any chain of imports: every strongly connected part of the graph is one module."""
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = lowest[module] = len(index)
        stack.append(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                lowest[module] = min(lowest[module], lowest[imported])
            elif imported in stack:
                lowest[module] = min(lowest[module], index[imported])
        if lowest[module] == index[module]:
            part = []
            while not part or part[-1] != module:
                part.append(stack.pop())
            if len(part) > 1:
                circles.append(sorted(part))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)

    assert circles == []
