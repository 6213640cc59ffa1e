"""The import graph of the layers, read from the source as tests/test_layers.py reads it (ast: lazy,
relative and literal importlib imports included), so the figure in docs/architecture.md regenerates.

    python benchmarks/import_graph.py          # folder -> folder arrows, by layer, with import counts
    python benchmarks/import_graph.py --dot    # the same as Graphviz dot
    python benchmarks/import_graph.py --importlinter > layers.ini   # the layers as an import-linter contract
    PYTHONPATH=src lint-imports --config layers.ini                  # checked by import-linter, on src/stallfree

Path-reading tools (grimp, import-linter, pydeps) cannot draw this from the tree: docs/architecture.md
says why. This reads pyproject.toml's package-dir map instead, the one place the tree is mapped.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_layers import LAYERS, ROOT, edges, package_dirs


def arrows() -> Counter[tuple[str, str]]:
    """(importing folder, imported folder) -> how many import statements, each folder's own left out."""
    return Counter((folder, target) for _, folder, _, target in edges() if target != folder)


def text(found: Counter[tuple[str, str]]) -> str:
    lines = []
    for layer in sorted(set(LAYERS.values()), reverse=True):
        for folder in sorted(f for f, n in LAYERS.items() if n == layer):
            out = sorted((t for f, t in found if f == folder), key=lambda t: (-LAYERS[t], t))
            shown = ", ".join(f"{t}/ ({LAYERS[t]}) x{found[folder, t]}" for t in out) or "-"
            lines.append(f"{layer}  {folder + '/':17} -> {shown}")
    up = sum(n for (f, t), n in found.items() if LAYERS[t] > LAYERS[f])
    lines.append(f"{len(found)} arrows between folders, {sum(found.values())} imports, {up} pointing up")
    return "\n".join(lines)


def dot(found: Counter[tuple[str, str]]) -> str:
    lines = ["digraph layers {", "  rankdir=BT;"]
    for layer in sorted(set(LAYERS.values())):
        names = " ".join(f'"{f}/";' for f in sorted(f for f, n in LAYERS.items() if n == layer))
        lines.append(f"  {{ rank=same; {names} }}")
    lines += [f'  "{f}/" -> "{t}/" [label={n}];' for (f, t), n in sorted(found.items())]
    return "\n".join([*lines, "}"])


def importlinter() -> str:
    """The layers as an import-linter `layers` contract, top first. Two things it cannot say as the
    test does: the CLI's root package holds the others, so the CLI is its modules; and a layer cannot
    sit inside another (prefix/contract/, layer 0, in prefix/, layer 1), so a nested folder is checked
    as part of its parent, with the lower layers' imports of it ignored."""
    folders = package_dirs()
    cli = sorted(p.stem for p in (ROOT / "cli").iterdir() if p.suffix == ".py" and p.stem != "__init__")
    names = {folder: [folders[folder]] for folder in LAYERS if "/" not in folder}
    names["cli"] = ["stallfree.commands", *(f"stallfree.{m}" for m in cli)]
    lines = ["[importlinter]", "root_package = stallfree", "", "[importlinter:contract:layers]",
             "name = the layers of tests/test_layers.py", "type = layers", "layers ="]
    for layer in sorted(set(LAYERS.values()), reverse=True):
        row = [n for f in sorted(names) if LAYERS[f] == layer for n in names[f]]
        lines += ["    " + " : ".join(row)] if row else []
    nested = [(f, f.rsplit("/", 1)[0]) for f in LAYERS if "/" in f]
    ignored = [f"    {folders[low]}.** -> {folders[f]}.**" for f, parent in nested for low in sorted(names)
               if LAYERS[low] < LAYERS[parent]]
    return "\n".join(lines + (["ignore_imports =", *ignored] if ignored else [])) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", action="store_true", help="print Graphviz dot instead of text")
    parser.add_argument("--importlinter", action="store_true", help="print the layers as an import-linter contract")
    args = parser.parse_args()
    if args.importlinter:
        print(importlinter(), end="")
        return
    found = arrows()
    print(dot(found) if args.dot else text(found))


if __name__ == "__main__":
    main()
