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


FAMILIES = ("Sequence", "Track")  # the glossary's words whose class each design names after itself
SKIP = {"src", "tests"}  # src/ is a symlink view of the package folders; dot-folders are skipped too


def family_classes(root: Path) -> list[str]:
    """`file:Name` of every class, outside tests, whose name ends in a family's word."""
    found: list[str] = []
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name not in SKIP and not p.name.startswith("."))
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(root)
            found += [f"{rel.as_posix()}:{node.name}" for node in ast.parse(path.read_text()).body
                      if isinstance(node, ast.ClassDef) and node.name.endswith(FAMILIES)]
    return found


def unlisted(section: str, root: Path = ROOT) -> list[str]:
    listed = {f"{file}:{name}" for file, name in references(section)}
    return [name for name in family_classes(root) if name not in listed]


def test_every_sequence_and_track_class_is_in_the_glossary() -> None:
    """A design's own record of a request in progress says the word (`PagedSequence`, `PagedTrack`)
    and the glossary lists it, so a new design's record cannot slip in under another name unseen."""
    section = glossary((ROOT / "docs" / "spec.md").read_text())
    assert len(family_classes(ROOT)) >= 7  # the scan finds the classes, not nothing
    assert unlisted(section) == []
    assert unlisted(section.replace("`paged/scheduler.py:PagedSequence`", "")) == ["paged/scheduler.py:PagedSequence"]


def test_the_family_check_sees_an_unlisted_class(tmp_path: Path) -> None:
    """Negative control: a design's new sequence class the glossary does not name is reported; a
    class of another word, and one under tests/, are not."""
    (tmp_path / "d").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "d" / "s.py").write_text("class ToySequence: ...\nclass ToyTrack: ...\nclass Toy: ...\n")
    (tmp_path / "tests" / "t.py").write_text("class TestSequence: ...\n")
    assert unlisted("`d/s.py:ToyTrack`", tmp_path) == ["d/s.py:ToySequence"]
