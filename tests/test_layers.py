"""Arrows point one way: no module imports from a higher layer, and the README's folder table is the
tree. Read from the source with `ast`, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Each folder's layer: a module may import its own layer's folders and lower ones, never higher.
LAYERS: dict[str, int] = {
    "spec": 0,  # the contract
    "prefix/contract": 0,  # the prefix-caching design's contract (its scheduler, in prefix/, is layer 1)
    "reference": 1, "paged": 1, "prefix": 1, "variants": 1,  # schedulers that keep it
    "faults": 2, "testing": 2,  # wrong schedulers built on a variant; the tools that test schedulers
    "conformance": 3, "proofs": 3, "costs": 3,  # checking and pricing
    "sim": 4, "executor": 4, "view": 4, "serving": 4,  # running plans (simulated, on a model, in vLLM), drawing them
    "exercises": 5,  # the graded exercises, built on the view and the checks, never on the command line
    "cli": 6,  # the `stallfree` command
}


def package_dirs() -> dict[str, str]:
    """Folder -> the package it is, from pyproject.toml (the only map of the tree)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {folder: name for name, folder in config["tool"]["setuptools"]["package-dir"].items()}


def imported_folder(module: str, folders: dict[str, str]) -> str | None:
    by_package = {name: folder for folder, name in folders.items()}
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        folder = by_package.get(".".join(parts[:n]))
        if folder is not None:
            return folder
    return None


def imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return [m for m in found if m == "stallfree" or m.startswith("stallfree.")]


def test_every_folder_has_a_layer() -> None:
    assert set(package_dirs()) == set(LAYERS), "a new top-level folder needs its layer here"


def test_no_import_points_up() -> None:
    folders = package_dirs()
    upward = []
    for folder, layer in LAYERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            for module in imports(path):
                target = imported_folder(module, folders)
                if target is not None and LAYERS[target] > layer:
                    upward.append(f"{path.relative_to(ROOT)} imports {module} (layer {LAYERS[target]} > {layer})")
    assert not upward, "\n".join(upward)


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    """Negative control: a spec module importing the reference is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from stallfree.reference import Scheduler\n    return Scheduler\n")
    (module,) = imports(bad)
    assert LAYERS[imported_folder(module, package_dirs()) or ""] > LAYERS["spec"]


def test_readme_folder_table_is_the_tree() -> None:
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `([a-z/]+?)/`(?:, `([a-z/]+?)/`)? \| ", readme, flags=re.M)
    listed = {folder for row in rows for folder in row if folder}
    assert listed == set(package_dirs())


def test_the_command_line_is_the_top_layer() -> None:
    """What the exercises and the views need (the hand trace, the step table) lives below the CLI: no
    exercise or view module imports stallfree.commands or the CLI's own modules."""
    assert max(LAYERS.values()) == LAYERS["cli"] and list(LAYERS.values()).count(LAYERS["cli"]) == 1
    assert LAYERS["view"] < LAYERS["exercises"] < LAYERS["cli"]


def test_the_layer_check_sees_an_exercise_importing_the_cli(tmp_path: Path) -> None:
    """Negative control: a lazy import of the CLI's hand trace from an exercise is an upward import."""
    bad = tmp_path / "bad.py"
    bad.write_text("def rows():\n    from stallfree.commands.trace import HAND_TRACE\n    return HAND_TRACE\n")
    (module,) = imports(bad)
    assert LAYERS[imported_folder(module, package_dirs()) or ""] > LAYERS["exercises"]
