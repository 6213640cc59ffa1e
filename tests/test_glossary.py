"""The glossary in docs/spec.md ("One word for one thing") names code as `FILE:NAME`: each such name
is defined in that file, so the table's list of names still to rename stays true as code changes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def glossary(text: str) -> str:
    start = text.index("## One word for one thing")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def references(section: str) -> list[tuple[str, str]]:
    """(file, dotted name) for every `path/to/file.py:Name` or `...:Class.attr` in the section."""
    return re.findall(r"`([a-z_/]+\.py):([A-Za-z_][\w.]*)`", section)


def names_in(body: list[ast.stmt]) -> set[str]:
    """Classes, functions and assigned names (annotated fields included) at one level of a body."""
    found = set()
    for node in body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            found.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Assign):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


def defines(path: Path, dotted: str) -> bool:
    """Whether `path` defines `dotted`: a top-level name, then members of that class."""
    body: list[ast.stmt] = ast.parse(path.read_text()).body
    for i, part in enumerate(parts := dotted.split(".")):
        if part not in names_in(body):
            return False
        if i + 1 < len(parts):
            classes = [n for n in body if isinstance(n, ast.ClassDef) and n.name == part]
            if not classes:
                return False
            body = classes[0].body
    return True


def missing(section: str, root: Path = ROOT) -> list[str]:
    return [f"{file}:{name}" for file, name in references(section)
            if not (root / file).is_file() or not defines(root / file, name)]


def test_every_name_in_the_glossary_is_defined_where_it_says() -> None:
    section = glossary((ROOT / "docs" / "spec.md").read_text())
    assert len(references(section)) >= 20  # the table is read, not skipped
    assert missing(section) == []


def test_the_glossary_check_sees_a_renamed_class(tmp_path: Path) -> None:
    """Negative control: a class renamed, a field gone, a file moved, each reported."""
    (tmp_path / "m.py").write_text("class Sequence:\n    num_emitted: int = 0\n")
    section = "`m.py:Sequence` `m.py:Track` `m.py:Sequence.num_emitted` `m.py:Sequence.phase` `gone.py:Sequence`"
    assert missing(section, tmp_path) == ["m.py:Track", "m.py:Sequence.phase", "gone.py:Sequence"]
