"""Move the four executor modules whose importers sat below them, so that the executor's subpackages
are ordered layers < models < engine < runs < exactness (issue 24, item 7; tests/test_layers.py
keeps the order):

    models/seeds.py   -> layers/seeds.py     the sampler draws from it
    engine/batch.py   -> layers/batch.py     attention and the model read the flat batch
    runs/progress.py  -> layers/progress.py  the process group stamps progress around each collective
    layers/padding.py -> models/padding.py   it pads a model's config and weights

    python scripts/moves/executor_order.py           move what is left, then point every importer (and
                                                     every path written in docs and scripts) at the new place
    python scripts/moves/executor_order.py --check   exit 1 naming each move still to be done

Re-runnable: a module already moved is not moved again; importers added since are pointed at it.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_types import ROOT, module_of, module_path, resolve, spelled

MOVES: dict[str, str] = {  # old module -> new module
    "stallfree.executor.models.seeds": "stallfree.executor.layers.seeds",
    "stallfree.executor.engine.batch": "stallfree.executor.layers.batch",
    "stallfree.executor.runs.progress": "stallfree.executor.layers.progress",
    "stallfree.executor.layers.padding": "stallfree.executor.models.padding",
}
TEXTS = (".md", ".sh", ".py", ".toml")  # where a path such as executor/engine/batch.py may be written
SKIP = {".venv", ".venv-vllm", "src", "build", "mutants", "node_modules", ".git"}


def rel(module: str) -> str:
    return str(module_path(module).relative_to(ROOT))


def rewritten(path: Path, text: str) -> str:
    """`text` with every `from OLD import ...` (absolute or relative) reading from the new module."""
    here, is_package = module_of(path), path.name == "__init__.py"
    lines = text.splitlines(keepends=True)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and resolve(node, here, is_package) in MOVES:
            old = "." * node.level + (node.module or "")
            new = spelled(MOVES[resolve(node, here, is_package) or ""], here, is_package, node.level > 0)
            row = lines[node.lineno - 1]
            lines[node.lineno - 1] = row.replace(f"from {old} import", f"from {new} import", 1)
    text = "".join(lines)
    for old, new in MOVES.items():
        text = text.replace(rel(old), rel(new)).replace(old + " ", new + " ")
    return text


def text_files() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP and not d.endswith(".egg-info")]  # never into a venv
        found += [Path(folder, f) for f in files if f.endswith(TEXTS) and f != Path(__file__).name]
    return sorted(p for p in found if not p.is_symlink())


def pending() -> list[str]:
    todo = [f"{rel(old)} is still there (to {rel(new)})" for old, new in MOVES.items() if module_path(old).exists()]
    for path in text_files():
        text = path.read_text()
        if (rewritten(path, text) if path.suffix == ".py" else replaced(text)) != text:
            todo.append(f"{path.relative_to(ROOT)} names a moved module by its old place")
    return todo


def replaced(text: str) -> str:
    for old, new in MOVES.items():
        text = text.replace(rel(old), rel(new))
    return text


def run() -> int:
    for old, new in MOVES.items():
        if module_path(old).exists() and not module_path(new).exists():
            subprocess.run(["git", "mv", rel(old), rel(new)], cwd=ROOT, check=True)
    changed = 0
    for path in text_files():
        text = path.read_text()
        new = rewritten(path, text) if path.suffix == ".py" else replaced(text)
        if new != text:
            path.write_text(new)
            changed += 1
    subprocess.run([sys.executable, "-m", "ruff", "check", "--quiet", "--fix", "--select", "I001", "executor", "tests",
                    "cli"], cwd=ROOT, check=False)
    return changed


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        todo = pending()
        for line in todo:
            print(f"to move: {line}")
        print(f"executor_order: {len(todo)} move(s) still to be done" if todo else "executor_order: nothing to move")
        return 1 if todo else 0
    if argv:
        print("usage: executor_order.py [--check]", file=sys.stderr)
        return 2
    print(f"executor_order: {run()} file(s) changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
