"""The import graph of the layers, read from the source as tests/test_layers.py reads it (ast: lazy,
relative and literal importlib imports included), so the figure in docs/architecture.md regenerates.

    python benchmarks/import_graph.py          # folder -> folder arrows, by layer, with import counts
    python benchmarks/import_graph.py --dot    # the same as Graphviz dot

Path-reading tools (grimp, import-linter, pydeps) cannot draw this from the tree: docs/architecture.md
says why. This reads pyproject.toml's package-dir map instead, the one place the tree is mapped.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_layers import LAYERS, edges


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", action="store_true", help="print Graphviz dot instead of text")
    found = arrows()
    print(dot(found) if parser.parse_args().dot else text(found))


if __name__ == "__main__":
    main()
