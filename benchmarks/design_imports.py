"""What the rest of the tree takes from the reservation design's room (spec/reservation/): the names
each group of folders imports from it, read from the source with ast (a `from` import's names, and
`module.name` where a reservation module is imported whole). The figure in docs/architecture.md.

    python benchmarks/design_imports.py          # per group: distinct names, (file, name) pairs, the names
    python benchmarks/design_imports.py --files  # ... and each importing file's names
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_layers import ROOT, absolute, module_name, package_dirs

ROOM = "stallfree.spec.reservation"
DESIGNS = ("spec/paged/", "spec/variants/", "prefix/", "paged/", "variants/")  # the other designs' folders
SKIP = {".venv", ".venv-vllm", "src", "build", "mutants", "node_modules"}


def group(rel: str) -> str:
    if rel.startswith("spec/reservation/"):
        return "the room itself"
    if rel.startswith("spec/") and rel.count("/") == 1:
        return "kernel"
    return "other designs" if rel.startswith(DESIGNS) else "consumers"


def taken(path: Path, here: str | None) -> set[str]:
    """The names `path` takes from the room, as `module.name`."""
    tree = ast.parse(path.read_text())
    found, whole = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            read = absolute(node, here, path.name == "__init__.py") or [""]
            source = read[0] if node.module else read[0].rsplit(".", 1)[0]  # `from . import x`: its package
            for a in node.names:
                if source.startswith(ROOM + "."):
                    found.add(f"{source[len(ROOM) + 1:]}.{a.name}")
                elif source == ROOM:
                    whole[a.asname or a.name] = a.name
        elif isinstance(node, ast.Import):
            whole.update({a.asname: a.name[len(ROOM) + 1:] for a in node.names if a.asname and a.name.startswith(ROOM)})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in whole \
                and not node.attr.startswith("__"):
            found.add(f"{whole[node.value.id]}.{node.attr}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", action="store_true", help="list each importing file's names")
    args = parser.parse_args()
    folders = package_dirs()
    by_group: dict[str, dict[str, set[str]]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if SKIP.intersection(path.relative_to(ROOT).parts) or path.is_symlink():
            continue
        try:
            here = module_name(path, folders)
        except ValueError:
            here = None
        names = taken(path, here)
        if names:
            by_group.setdefault(group(rel), {})[rel] = names
    for name in ("kernel", "other designs", "consumers"):
        files = by_group.get(name, {})
        distinct = sorted(set().union(*files.values())) if files else []
        pairs = sum(len(n) for n in files.values())
        print(f"{name}: {len(distinct)} distinct names, {pairs} (file, name) pairs, {len(files)} files")
        print(f"  {', '.join(distinct) or '-'}")
        if args.files:
            for rel, names in files.items():
                print(f"    {rel}: {', '.join(sorted(names))}")


if __name__ == "__main__":
    main()
