"""Arrows point one way: no module imports from a higher layer, every folder of the tree has a layer
(or is named as outside the package), and the README's folder table is the tree. Read from the source
with `ast`, so a lazy import inside a function, a relative import and `importlib.import_module` of a
literal name count too. `python benchmarks/import_graph.py` prints the arrows this test reads."""

from __future__ import annotations

import ast
import os
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

# Top-level folders with Python in them that are not part of the package: they use it from outside,
# so they may import any layer, and nothing in the package imports them.
OUTSIDE = {"tests", "benchmarks", "docs", "scripts"}


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


def module_name(path: Path, folders: dict[str, str]) -> str:
    """The dotted name a file under ROOT is imported by: its nearest mapped folder's package, then the
    rest of its path (a package's __init__.py is the package itself)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    for n in range(len(parts), 0, -1):
        name = folders.get("/".join(parts[:n]))
        if name is not None:
            rest = [p for p in parts[n:] if p != "__init__"]
            return ".".join([name, *rest])
    raise ValueError(f"path {path}: not under a folder of [tool.setuptools.package-dir]")


def absolute(node: ast.ImportFrom, here: str | None, is_package: bool) -> list[str]:
    """The absolute names a `from` import reads: a relative one resolved against the module `here`."""
    if node.level == 0:
        return [node.module] if node.module else []
    if here is None:
        return []
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    if node.module:
        return [".".join([*base, node.module])]
    return [".".join([*base, alias.name]) for alias in node.names]


def literal_import(node: ast.Call) -> str | None:
    """`importlib.import_module("stallfree.x")` or `__import__("stallfree.x")`: the literal name."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def imports(path: Path, here: str | None = None) -> list[str]:
    """Every stallfree module `path` imports; `here`, the module's own name, resolves relative imports."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            found.extend(absolute(node, here, path.name == "__init__.py"))
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.Call) and (name := literal_import(node)) is not None:
            found.append(name)
    return [m for m in found if m == "stallfree" or m.startswith("stallfree.")]


def layer_files() -> list[tuple[str, Path]]:
    """(folder, file) for every Python file of the package, each under its deepest layered folder."""
    found = {}
    for folder in sorted(LAYERS, key=len):  # prefix/ first, then prefix/contract/ claims its own files
        for path in (ROOT / folder).rglob("*.py"):
            found[path] = folder
    return sorted(((folder, path) for path, folder in found.items()), key=lambda pair: pair[1])


def edges() -> list[tuple[Path, str, str, str]]:
    """(file, its folder, the stallfree module it imports, that module's folder), for every import."""
    folders = package_dirs()
    found = []
    for folder, path in layer_files():
        for module in imports(path, module_name(path, folders)):
            target = imported_folder(module, folders)
            if target is not None:
                found.append((path, folder, module, target))
    return found


def upward_imports() -> list[str]:
    return [f"{path.relative_to(ROOT)} imports {module} (layer {LAYERS[target]} > {LAYERS[folder]})"
            for path, folder, module, target in edges() if LAYERS[target] > LAYERS[folder]]


def src_view_links(root: Path = ROOT) -> dict[str, str]:
    """src/stallfree/'s entries (scripts/src-view.sh): name -> the folder or file it links to."""
    view = root / "src" / "stallfree"
    return {entry.name: os.readlink(entry) if entry.is_symlink() else "(not a link)" for entry in view.iterdir()}


def src_view_expected(root: Path = ROOT) -> dict[str, str]:
    """The links the package map asks for: the root package's entries, then one per top-level subpackage."""
    folders = package_dirs()
    top = {v: k for k, v in folders.items()}["stallfree"]
    links = {p.name: f"../../{top}/{p.name}" for p in (root / top).iterdir() if p.name != "__pycache__"}
    for folder, name in folders.items():
        if name.count(".") == 1:
            links[name.split(".")[1]] = f"../../{folder}"
    return links


def test_the_src_view_is_the_package_map() -> None:
    """src/stallfree/ lays the package out by its import names, for tools that read a package by its
    paths (docs/architecture.md); it is links only, and matches pyproject.toml's package-dir."""
    assert src_view_links() == src_view_expected(), "run scripts/src-view.sh"


def test_the_src_view_check_sees_a_missing_link(tmp_path: Path) -> None:
    """Negative control: a cli/ file with no link in the view, and a copied file instead of a link."""
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "new.py").write_text("")
    view = tmp_path / "src" / "stallfree"
    view.mkdir(parents=True)
    (view / "spec").write_text("")
    links, expected = src_view_links(tmp_path), src_view_expected(tmp_path)
    assert "new.py" in expected and "new.py" not in links
    assert links["spec"] == "(not a link)" != expected["spec"]


def test_every_folder_has_a_layer() -> None:
    assert set(package_dirs()) == set(LAYERS), "a new top-level folder needs its layer here"


# What .gitignore keeps out of the tree (a virtual environment, build output, mutation runs).
IGNORED = {"build", "dist", "mutants", "out"}


def top_folders_with_python(root: Path = ROOT) -> set[str]:
    return {d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name not in IGNORED
            and not d.name.endswith(".egg-info") and next((p for p in d.rglob("*.py") if not p.is_symlink()), None)}


def test_every_folder_with_python_is_a_layer_or_outside() -> None:
    """No top-level folder escapes the check: each holding a .py file is a layer or named outside."""
    assert top_folders_with_python() == {f.split("/")[0] for f in LAYERS} | OUTSIDE


def test_every_package_is_in_a_layer() -> None:
    """Every installed package (subpackages included) sits in a layered folder."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = package_dirs()
    unplaced = [name for name in config["tool"]["setuptools"]["packages"] if imported_folder(name, folders) is None]
    assert not unplaced


def test_no_import_points_up() -> None:
    upward = upward_imports()
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


def test_the_layer_check_resolves_a_relative_import(tmp_path: Path) -> None:
    """Negative control: `from ...reference import` in a spec subpackage reaches the reference, and
    `from .spec import` in the CLI's root package is an import of stallfree.spec."""
    bad = tmp_path / "bad.py"
    bad.write_text("from ...reference import Scheduler\n")
    assert imports(bad, "stallfree.spec.paged.rules") == ["stallfree.reference"]
    assert imports(bad, "stallfree.spec.reservation.rules") == ["stallfree.reference"]
    assert imports(bad, "stallfree.executor.engine.job") == ["stallfree.reference"]
    assert LAYERS[imported_folder("stallfree.reference", package_dirs()) or ""] > LAYERS["spec"]
    init = tmp_path / "__init__.py"
    init.write_text("from .spec import Monitor\nfrom . import steptable\n")
    assert imports(init, "stallfree") == ["stallfree.spec", "stallfree.steptable"]


def test_the_layer_check_sees_a_literal_import_module(tmp_path: Path) -> None:
    """Negative control: importlib.import_module of the CLI's module by a literal name, from an exercise."""
    bad = tmp_path / "bad.py"
    bad.write_text("import importlib\n\ndef f():\n    return importlib.import_module('stallfree.commands.trace')\n")
    (module,) = imports(bad, "stallfree.exercises.bad")
    assert LAYERS[imported_folder(module, package_dirs()) or ""] > LAYERS["exercises"]


def test_the_folder_check_sees_a_new_folder(tmp_path: Path) -> None:
    """Negative control: a new top-level folder with Python in it is found (hidden and ignored ones are not)."""
    for folder in ("spec", "extra/deep", ".venv", "build"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "m.py").write_text("")
    assert top_folders_with_python(tmp_path) == {"spec", "extra"}


def test_module_names_follow_the_package_map() -> None:
    folders = package_dirs()
    assert module_name(ROOT / "cli" / "commands" / "trace.py", folders) == "stallfree.commands.trace"
    assert module_name(ROOT / "spec" / "paged" / "__init__.py", folders) == "stallfree.spec.paged"
    assert module_name(ROOT / "prefix" / "contract" / "rules.py", folders) == "stallfree.prefix.contract.rules"
    assert module_name(ROOT / "spec" / "reservation" / "rules.py", folders) == "stallfree.spec.reservation.rules"
    assert module_name(ROOT / "executor" / "engine" / "job.py", folders) == "stallfree.executor.engine.job"


# Inside the executor, its subpackages are ordered the same way, lowest first: the layers it is built
# from, the model and its weights, the step path, the runs that launch it, the outputs judged.
EXECUTOR_ORDER = ("layers", "models", "engine", "runs", "exactness")


def executor_upward_imports(root: Path = ROOT) -> list[str]:
    """Each import, in a module of one executor subpackage, of a subpackage later in EXECUTOR_ORDER."""
    found = []
    for path in sorted((root / "executor").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts  # ("executor", subpackage, ..., module)
        if len(parts) < 3:
            continue  # executor/__init__.py: the package's front, importing nothing
        here = ".".join(["stallfree", *(p for p in parts if p != "__init__")])
        for module in imports(path, here):
            target = module.split(".")
            if target[:2] == ["stallfree", "executor"] and len(target) > 2 and target[2] in EXECUTOR_ORDER \
                    and EXECUTOR_ORDER.index(target[2]) > EXECUTOR_ORDER.index(parts[1]):
                found.append(f"{path.relative_to(root)} imports {module} ({target[2]} is above {parts[1]})")
    return found


def test_the_executor_subpackages_are_all_ordered() -> None:
    subpackages = {p.parent.name for p in (ROOT / "executor").glob("*/__init__.py")}
    assert subpackages == set(EXECUTOR_ORDER), "a new executor subpackage needs its place in EXECUTOR_ORDER"


def test_no_executor_import_points_up() -> None:
    upward = executor_upward_imports()
    assert not upward, "\n".join(upward)


def test_the_executor_order_check_sees_an_upward_import(tmp_path: Path) -> None:
    """Negative control: in a temp copy of executor/, the layers' sampler importing the run report (a
    relative import) and the model importing the step path (a lazy absolute one) are both caught."""
    copy = tmp_path / "executor"
    for path in (ROOT / "executor").rglob("*.py"):
        (copy / path.relative_to(ROOT / "executor")).parent.mkdir(parents=True, exist_ok=True)
        (copy / path.relative_to(ROOT / "executor")).write_text(path.read_text())
    assert executor_upward_imports(tmp_path) == []
    sampler = copy / "layers" / "sampler.py"
    sampler.write_text(sampler.read_text() + "\nfrom ..runs.report import render_report  # planted\n")
    model = copy / "models" / "model.py"
    model.write_text(model.read_text() + "\n\ndef planted():\n    from stallfree.executor.engine.job import Job\n"
                     "    return Job\n")
    assert executor_upward_imports(tmp_path) == [
        "executor/layers/sampler.py imports stallfree.executor.runs.report (runs is above layers)",
        "executor/models/model.py imports stallfree.executor.engine.job (engine is above models)",
    ]
