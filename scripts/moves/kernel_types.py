"""Move the types every design uses out of the reservation design's room into the kernel (issue 24,
item 3): rules, invariants, endings, lines, chunks, what a call returned and how a call is judged,
each to one module directly under spec/.

    python scripts/moves/kernel_types.py           do every move still to be done, then ruff's import fixes
    python scripts/moves/kernel_types.py --check   exit 1 naming each move still to be done (changes nothing)

Re-runnable on any tree: each definition is cut from its source module as that module now reads
(so a merged branch's edit to it moves with it), appended to its kernel module if that module does
not define it yet, and every importer of it from its old module (absolute or relative, by name or
through the module) is pointed at the new one. A second run finds nothing to do.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Move:
    names: tuple[str, ...]  # top-level definitions, in the order the target gets them
    source: str  # the module they leave, dotted
    target: str  # the kernel module they join, dotted


MOVES: tuple[Move, ...] = (
    Move(("Reason", "Ending", "ended_when"), "stallfree.spec.reservation.shadow", "stallfree.spec.ending"),
    Move(("ENDED",), "stallfree.spec.reservation.rules", "stallfree.spec.ending"),
    Move(("Tracked", "T", "Lines", "start_running"), "stallfree.spec.reservation.shadow", "stallfree.spec.lines"),
    Move(("Prefilled", "T", "Chunk"), "stallfree.spec.reservation.facts", "stallfree.spec.chunk"),
    Move(("MAX_ENTRIES", "bounded", "protocol", "returned", "plan_entries", "one_shot", "emitted_rids"),
         "stallfree.spec.reservation.facts", "stallfree.spec.returned"),
    Move(("never_fit", "call_judged"), "stallfree.spec.reservation.rules", "stallfree.spec.calls"),
    Move(("StepCheck", "Kind", "Rule", "select_from"), "stallfree.spec.reservation.rules", "stallfree.spec.rule"),
    Move(("Shown", "shown", "visible"), "stallfree.spec.reservation.invariants", "stallfree.spec.shown"),
    Move(("Origin", "StateCheck", "Invariant", "broken"), "stallfree.spec.reservation.invariants",
         "stallfree.spec.invariant"),
)

# What a kernel module starts as: its docstring and the imports its definitions need.
HEADERS: dict[str, str] = {
    "stallfree.spec.ending": '''"""How a request ends, in every design: the reason (length, stop,
cancel), the step it ended on, and the words a message says it with."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple
''',
    "stallfree.spec.lines": '''"""A design's lines (waiting, running, prefilling, tracks by rid) and
what every shadow derives from them, whatever a request's track holds."""

from __future__ import annotations

from collections import deque
from typing import Any, Generic, Protocol, TypeVar
''',
    "stallfree.spec.chunk": '''"""A chunk of prefill: positions [start, start + n) of one track, in any design."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar
''',
    "stallfree.spec.returned": '''"""What a scheduler's call returned, read safely: bounded (no endless
iterable hangs a monitor), a one-shot iterator refused, anything else a PROTOCOL violation naming
the call and the value."""

from __future__ import annotations

from itertools import islice

from .errors import RuleViolation
from .verdict import PROTOCOL
''',
    "stallfree.spec.calls": '''"""How a call the contract accepts or refuses is judged, in every design:
add() for NEVER-FIT, cancel() for CANCEL, a complete() with a bad stop for TOKENS."""

from __future__ import annotations
''',
    "stallfree.spec.rule": '''"""What a rule is, in every design: an ID, a kind, the statement in one
sentence, the predicates that judge it; and how a registry of them is selected from by ID."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any
''',
    "stallfree.spec.shown": '''"""What a scheduler shows of its state, where it shows it (free KV, queue
lengths, step count): read the same way by every design's invariants and monitor."""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from typing import Any
''',
    "stallfree.spec.invariant": '''"""What a state invariant is, in every design: an ID, where it comes from,
the statement, its check; and the first of a registry of them a state breaks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .shown import Shown
''',
}

# Text in a moved definition that named the reservation design's types: the kernel's reads any design's.
RETYPE: dict[str, tuple[tuple[str, str], ...]] = {
    "StepCheck": (('Callable[[Shadow, StepFacts], "str | None"]', 'Callable[[Any, Any], "str | None"]'),),
    "StateCheck": (('Callable[[Shadow, Shown], "str | None"]', 'Callable[[Any, Shown], "str | None"]'),),
    "broken": (("shadow: Shadow, view: Shown, invariants: tuple[Invariant, ...] = INVARIANTS",
                "shadow: Any, view: Shown, invariants: tuple[Invariant, ...]"),),
}

# Calls the kernel's `broken` no longer completes (its registry has no default: a default would be a design).
FIXUPS: tuple[tuple[str, str, str], ...] = (
    ("proofs/explicit/design.py", "broken(monitor.shadow, shown(monitor.scheduler))",
     "broken(monitor.shadow, shown(monitor.scheduler), invariants.INVARIANTS)"),
    ("tests/test_spec_invariants.py", "broken(m.shadow, shown(m.scheduler)) is None",
     "broken(m.shadow, shown(m.scheduler), INVARIANTS) is None"),
)

# scripts/compiled.sh compiles the modules a campaign runs: the kernel modules the monitor now reads join it.
COMPILED = ROOT / "scripts" / "compiled.sh"
COMPILED_BEFORE = "spec/reservation/shadow.py"
SKIP_DIRS = {".venv", ".venv-vllm", "src", "build", "mutants", "node_modules", ".git"}


def package_dirs() -> dict[str, str]:
    """Package -> folder, from pyproject.toml."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(config["tool"]["setuptools"]["package-dir"])


def module_path(module: str) -> Path:
    dirs = package_dirs()
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        folder = dirs.get(".".join(parts[:n]))
        if folder is not None:
            return ROOT.joinpath(folder, *parts[n:]).with_suffix(".py")
    raise ValueError(f"module {module!r}: under no package of [tool.setuptools.package-dir]")


def module_of(path: Path) -> str | None:
    """The dotted name of a file of the package, or None (a test, a benchmark, a script)."""
    rel = path.relative_to(ROOT).with_suffix("").parts
    by_folder = {folder: name for name, folder in package_dirs().items()}
    for n in range(len(rel), 0, -1):
        name = by_folder.get("/".join(rel[:n]))
        if name is not None:
            return ".".join([name, *[p for p in rel[n:] if p != "__init__"]])
    return None


def python_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*.py"):
        if not SKIP_DIRS.intersection(path.relative_to(ROOT).parts) and not path.is_symlink():
            found.append(path)
    return sorted(found)


# -- cutting definitions out of a source module -------------------------------------------------------


def bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def span(lines: list[str], node: ast.stmt) -> tuple[int, int]:
    """0-based [start, end) of a top-level definition: its decorators and the comment lines right
    above it (not a `# --` section header, which stays with its section)."""
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
    while start > 0 and lines[start - 1].startswith("#") and not lines[start - 1].startswith("# --"):
        start -= 1
    return start, node.end_lineno or node.lineno


def defined(path: Path) -> dict[str, ast.stmt]:
    if not path.exists():
        return {}
    return {name: node for node in ast.parse(path.read_text()).body for name in bound_names(node)}


def cut(move: Move) -> list[str]:
    """Remove `move`'s names from its source; return their text (source order), retyped for the kernel."""
    path = module_path(move.source)
    lines = path.read_text().splitlines(keepends=True)
    nodes = defined(path)
    spans = sorted(span(lines, nodes[n]) for n in move.names if n in nodes)
    texts = ["".join(lines[a:b]) for a, b in spans]
    for name in move.names:
        if name in nodes:
            for old, new in RETYPE.get(name, ()):
                texts = [t.replace(old, new) for t in texts]
    for a, b in reversed(spans):
        del lines[a:b]
    path.write_text(squeeze("".join(lines)))
    return texts


def squeeze(text: str) -> str:
    """At most two blank lines in a row, none at the end, and no `# --` section header left empty."""
    text = re.sub(r"^# --[^\n]*\n\s*(?=^# --)", "", text, flags=re.M)
    return re.sub(r"\n{4,}", "\n\n\n", text).rstrip("\n") + "\n"


def paste(move: Move, texts: list[str]) -> None:
    path = module_path(move.target)
    body = path.read_text() if path.exists() else HEADERS[move.target]
    have = defined(path)
    new = [t for t in texts if not set(bound_names(ast.parse(t).body[0])) & set(have)]
    if new:
        path.write_text(squeeze(body + "\n\n" + "\n\n".join(t.strip("\n") + "\n" for t in new)))


# -- pointing importers at the kernel -----------------------------------------------------------------


def resolve(node: ast.ImportFrom, here: str | None, is_package: bool) -> str | None:
    """The absolute module a `from` import reads from (None: relative, in a file of no package)."""
    if node.level == 0:
        return node.module
    if here is None:
        return None
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module]) if node.module else ".".join(base)


def spelled(target: str, here: str | None, is_package: bool, relative: bool) -> str:
    """How `here` writes an import of `target`: relative if the old import was and it shares a package."""
    if not relative or here is None:
        return target
    base = here.split(".") if is_package else here.split(".")[:-1]
    parts = target.split(".")
    common = 0
    while common < min(len(base), len(parts)) and base[common] == parts[common]:
        common += 1
    if common == 0:
        return target
    return "." * (len(base) - common + 1) + ".".join(parts[common:])


def moved_from(module: str) -> dict[str, str]:
    """name -> its kernel module, for the names that left `module`."""
    return {n: m.target for m in MOVES if m.source == module for n in m.names}


def alias_text(alias: ast.alias) -> str:
    return alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"


def import_line(indent: str, module: str, aliases: list[ast.alias], comment: str) -> str:
    return f"{indent}from {module} import {', '.join(alias_text(a) for a in aliases)}{comment}\n"


def rewrite_from_imports(path: Path, text: str) -> str:
    """Each `from OLD import a, b` naming a moved name is split: moved names from their kernel module."""
    here, is_package = module_of(path), path.name == "__init__.py"
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = resolve(node, here, is_package)
        moved = moved_from(source) if source else {}
        if not moved or not any(a.name in moved for a in node.names):
            continue
        first = lines[node.lineno - 1]
        indent = first[: len(first) - len(first.lstrip())]
        tail = lines[(node.end_lineno or node.lineno) - 1]
        comment = "  " + tail[tail.index("#"):].rstrip("\n") if "#" in tail.split(" import ", 1)[-1] else ""
        kept = [a for a in node.names if a.name not in moved]
        out = [import_line(indent, "." * node.level + (node.module or ""), kept, comment)] if kept else []
        for target in dict.fromkeys(moved[a.name] for a in node.names if a.name in moved):
            names = [a for a in node.names if moved.get(a.name) == target]
            out.append(import_line(indent, spelled(target, here, is_package, node.level > 0), names,
                                   "" if kept else comment))
        edits.append((node.lineno - 1, node.end_lineno or node.lineno, "".join(out)))
    for a, b, new in sorted(edits, reverse=True):
        lines[a:b] = [new]
    return "".join(lines)


def module_aliases(tree: ast.Module, here: str | None, is_package: bool) -> dict[str, str]:
    """Local name -> source module, for each source module imported whole (`from X import rules`,
    `import a.b.c as c`)."""
    sources = {m.source for m in MOVES}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = resolve(node, here, is_package)
            for a in node.names:
                if base and f"{base}.{a.name}" in sources:
                    found[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in sources and a.asname:
                    found[a.asname] = a.name
    return found


def rewrite_attributes(path: Path, text: str) -> str:
    """`rules.Rule`, where `rules` is a source module imported whole and Rule moved: `Rule`, imported
    from its kernel module; where the file binds that name itself, `rule.Rule`, the kernel module
    imported whole. Exits, naming the file, where that name is taken too."""
    here, is_package = module_of(path), path.name == "__init__.py"
    tree = ast.parse(text)
    aliases = module_aliases(tree, here, is_package)
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id in aliases and n.attr in moved_from(aliases[n.value.id])]
    if not uses:
        return text
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args + n.kwonlyargs}
    lines = text.splitlines(keepends=True)
    names: dict[str, list[str]] = {}  # kernel module -> names imported from it
    whole: set[str] = set()  # kernel modules imported whole
    for u in sorted(uses, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        target = moved_from(aliases[u.value.id])[u.attr]  # type: ignore[attr-defined]
        short = target.rsplit(".", 1)[1]
        if u.attr not in bound:
            written = u.attr
            names.setdefault(target, [])
            if u.attr not in names[target]:
                names[target].append(u.attr)
        elif short not in bound:
            written = f"{short}.{u.attr}"
            whole.add(target)
        else:
            sys.exit(f"kernel_types: {path.relative_to(ROOT)} binds {u.attr!r} and {short!r} itself; "
                     f"point its {u.value.id}.{u.attr} at {target} by hand")  # type: ignore[attr-defined]
        row = lines[u.lineno - 1]
        lines[u.lineno - 1] = row[: u.col_offset] + written + row[u.end_col_offset:]
    for target in whole:
        package, short = target.rsplit(".", 1)
        names.setdefault(package, []).append(short)
    return add_imports(path, "".join(lines), names)


def add_imports(path: Path, text: str, wanted: dict[str, list[str]]) -> str:
    """`from TARGET import names` lines after the module's last top-level import (ruff sorts them)."""
    here, is_package = module_of(path), path.name == "__init__.py"
    tree = ast.parse(text)
    last = max((n.end_lineno or n.lineno for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)), default=0)
    lines = text.splitlines(keepends=True)
    relative = here is not None and here.startswith("stallfree.spec")
    new = [f"from {spelled(t, here, is_package, relative)} import {', '.join(sorted(ns))}\n"
           for t, ns in wanted.items()]
    lines[last:last] = new
    return "".join(lines)


def still_used(path: Path, text: str) -> str:
    """A source module that still uses a name it gave away imports it back from the kernel."""
    here = module_of(path)
    moved = moved_from(here or "")
    tree = ast.parse(text)
    have = {name for node in tree.body for name in bound_names(node)}
    have |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    wanted: dict[str, list[str]] = {}
    for name in sorted((used & set(moved)) - have):
        wanted.setdefault(moved[name], []).append(name)
    return add_imports(path, text, wanted) if wanted else text


# -- the plan ------------------------------------------------------------------------------------------


def pending() -> list[str]:
    """Each move still to be done, in words (empty: the tree is moved)."""
    todo = []
    for move in MOVES:
        left = [n for n in move.names if n in defined(module_path(move.source))]
        if left:
            todo.append(f"{move.source} still defines {left} (to {move.target})")
    for path in python_files():
        text = path.read_text()
        new = rewrite_from_imports(path, text)
        tree = ast.parse(new)
        here, is_package = module_of(path), path.name == "__init__.py"
        aliases = module_aliases(tree, here, is_package)
        attr = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id in aliases and n.attr in moved_from(aliases[n.value.id])]
        if new != text or attr:
            todo.append(f"{path.relative_to(ROOT)} imports moved names from their old module")
    for path, old, _ in FIXUPS:
        if old in (ROOT / path).read_text():
            todo.append(f"{path}: {old}")
    core = COMPILED.read_text()
    for module in sorted({m.target for m in MOVES}):
        rel = str(module_path(module).relative_to(ROOT))
        if rel not in core:
            todo.append(f"scripts/compiled.sh does not compile {rel}")
    return todo


def compile_kernel() -> None:
    text = COMPILED.read_text()
    missing = [str(module_path(m).relative_to(ROOT)) for m in dict.fromkeys(m.target for m in MOVES)]
    missing = [p for p in missing if p not in text]
    if missing:
        COMPILED.write_text(text.replace(COMPILED_BEFORE, " ".join([*missing, COMPILED_BEFORE]), 1))


def run() -> list[Path]:
    """Do every move; return the files changed."""
    before = {p: p.read_text() for p in python_files()}
    for move in MOVES:
        texts = cut(move)
        if texts:
            paste(move, texts)
    for path in python_files():
        text = path.read_text()
        new = still_used(path, rewrite_attributes(path, rewrite_from_imports(path, text)))
        if new != text:
            path.write_text(new)
    for rel, old, new in FIXUPS:
        fixed = ROOT / rel
        fixed.write_text(fixed.read_text().replace(old, new))
    compile_kernel()
    return [p for p in python_files() if before.get(p) != p.read_text()]


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print("usage: kernel_types.py [--check]", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        todo = pending()
        for line in todo:
            print(f"to move: {line}")
        print(f"kernel_types: {len(todo)} move(s) still to be done" if todo else "kernel_types: nothing to move")
        return 1 if todo else 0
    changed = run()
    if changed:  # unused imports the cuts left, and import order, fixed by the project's own linter
        files = [str(p) for p in changed]
        subprocess.run([sys.executable, "-m", "ruff", "check", "--quiet", "--fix", "--select", "F401,I001", *files],
                       cwd=ROOT, check=False)
    print(f"kernel_types: {len(changed)} file(s) changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
