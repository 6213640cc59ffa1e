"""The structure's figures, read from a git revision (default: the work tree), so that
docs/architecture.md's before/after table regenerates:

    python benchmarks/architecture_counts.py --rev fb6b634   # before the registry
    python benchmarks/architecture_counts.py                 # the work tree

- spec/'s and executor/'s layout: the modules directly in each, and its subfolders (a design's room, a
  concept's);
- files a design spans: product files (outside tests/, docs/, benchmarks/, scripts/) whose path names
  the design (`paged`, `prefix`), and the folders they sit in;
- branches on design identity: lines of the product that ask which contract or design they are under
  (`design == `, `== PAGED`, `== PREFIX`, `contract is None`, `contract is not None`), and `hasattr`
  probes in spec/play.py;
- places that list the designs or contracts by name (a table keyed by design or contract name);
- functions over 60 lines (tests/test_function_length.py's measure);
- run loops: functions with a loop that adds, cancels and plans or steps (the names called, a leading
  underscore dropped), and cancels typed as bare (rid, step) tuples rather than `Cancel`;
- the proofs' Z3 "prove each part, then assume it" loops (an innermost loop that asks the solver, then
  asserts a part with `.add`, not its negation), the proofs' result classes (`*Result`, `*Outcome`) whose
  verdict is their own string or bool (a field `result: str` or `holds: bool | None`), and the places
  that spell a verdict as a string of their own: the literals "holds", "counterexample", "unknown" in
  the proofs' code (docstrings left out), and the lines of proofs/ that map a result's own string or
  bool to a verdict (`z3_verdict`, a dict keyed by "holds", `.result == "..."`, `.holds is None`).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_PRODUCT = ("tests/", "docs/", "benchmarks/", "scripts/", "src/")  # src/: links to the product (scripts/src-view.sh)
BRANCH = re.compile(r"design == |== PAGED|== PREFIX|contract is None|contract is not None")
# A table keyed by design or variant names: the lists the registry replaced, and any new one.
NAME_TABLE = re.compile(r"^[A-Z_]+(: [^=]+)? = .*[{(]\s*(\"reservation\"|RESERVATION:|\"aligned\", \"budget-change\"|"
                        r"\"aging\": \"stallfree|\*\*\{design: )")
DESIGNS = ("paged", "prefix")
CANCEL_TUPLE = re.compile(r"cancel\w*: [^=]*tuple\[(tuple\[)?int, int\]")
TO_VERDICT = re.compile(r'z3_verdict\(|\{"holds": |\.result [!=]= "|\.holds is None')


def files(rev: str | None) -> list[str]:
    if rev is None:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    else:
        out = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
    return [f for f in out.splitlines() if f.endswith(".py") and not f.startswith(NOT_PRODUCT)]


def read(rev: str | None, path: str) -> str:
    if rev is None:
        return (ROOT / path).read_text() if (ROOT / path).exists() else ""
    return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True).stdout


def long_functions(source: str, limit: int = 60) -> int:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
               and n.end_lineno is not None and n.end_lineno - n.lineno + 1 > limit)


def run_loops(path: str, source: str) -> list[str]:
    """The functions of `source` with a loop that calls add, cancel and plan or step."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for loop in (n for n in ast.walk(fn) if isinstance(n, ast.While | ast.For)):
            called = {n.func.attr.lstrip("_") for n in ast.walk(loop)
                      if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
            if {"add", "cancel"} <= called and called & {"plan", "step"}:
                found.append(f"{path}:{fn.name}")
                break
    return found


def prove_then_assume(path: str, source: str) -> list[str]:
    """The innermost loops of `source` that ask Z3 (`refute`, `check`, `.check()`) and then assert a
    part (`.add(x)`, x not a `z3.Not`): each a copy of "prove each part, then assume it"."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        loops = [n for n in ast.walk(fn) if isinstance(n, ast.For)]
        for loop in loops:
            if any(inner is not loop and inner in loops for inner in ast.walk(loop)):
                continue  # an outer loop: its inner loop is counted
            calls = [n for n in ast.walk(loop) if isinstance(n, ast.Call)]
            asked = [c.lineno for c in calls if (isinstance(c.func, ast.Name) and c.func.id in ("refute", "check"))
                     or (isinstance(c.func, ast.Attribute) and c.func.attr == "check")]
            assumed = [c for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == "add" and c.args
                       and not (isinstance(c.args[0], ast.Call) and isinstance(c.args[0].func, ast.Attribute)
                                and c.args[0].func.attr == "Not")]
            if asked and any(c.lineno > min(asked) for c in assumed):
                found.append(f"{path}:{fn.name}")
    return found


def string_verdicts(source: str) -> tuple[int, int, int]:
    """(result classes with a verdict of their own type, verdict string literals, lines mapping a
    result's own string or bool to a verdict) in `source`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0, 0, 0
    own = 0
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name.endswith(("Result", "Outcome"))):
        fields = {(f.target.id, ast.unparse(f.annotation)) for f in cls.body
                  if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)}
        own += bool(fields & {("result", "str"), ("holds", "bool | None")})
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    literals = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docs
                   and n.value in ("holds", "counterexample", "unknown"))
    mappers = sum(1 for line in source.splitlines() if TO_VERDICT.search(line))
    return own, literals, mappers


def layout(paths: list[str], top: str) -> tuple[int, list[str]]:
    """A folder's modules directly in it (its __init__.py included), and its subfolders."""
    flat = sum(1 for p in paths if p.startswith(f"{top}/") and p.count("/") == 1)
    return flat, sorted({p.split("/")[1] for p in paths if p.startswith(f"{top}/") and p.count("/") == 2})


def counts(rev: str | None) -> dict[str, object]:
    paths = files(rev)
    sources = {p: read(rev, p) for p in paths}
    spans = {}
    for design in DESIGNS:
        named = [p for p in paths if design in p]
        spans[design] = (len(named), len({str(Path(p).parent) for p in named}))
    branches = sum(1 for s in sources.values() for line in s.splitlines() if BRANCH.search(line))
    probes = len(re.findall(r"hasattr\(", sources.get("spec/play.py", "")))
    tables = sorted(p for p, s in sources.items() for line in s.splitlines() if NAME_TABLE.search(line))
    (flat, rooms), (executor_flat, executor_rooms) = layout(paths, "spec"), layout(paths, "executor")
    return {"spec_flat": flat, "spec_rooms": rooms, "executor_flat": executor_flat, "executor_rooms": executor_rooms,
            "spans": spans, "branches": branches, "play_probes": probes,
            "name_tables": tables, "long_functions": sum(long_functions(s) for s in sources.values()),
            "files": len(paths),
            "run_loops": sorted(f for p, s in sources.items() for f in run_loops(p, s)),
            "cancel_tuples": sum(1 for s in sources.values() for line in s.splitlines() if CANCEL_TUPLE.search(line)),
            "prove_then_assume": sorted(f for p, s in sources.items() if p.startswith("proofs/")
                                        for f in prove_then_assume(p, s)),
            "string_verdicts": [sum(x) for x in zip(*(string_verdicts(s) for p, s in sources.items()
                                                       if p.startswith("proofs/")), strict=True)]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rev", default=None, help="a git revision (default: the work tree)")
    c = counts(p.parse_args().rev)
    for design, (num, folders) in c["spans"].items():  # type: ignore[attr-defined]
        print(f"files named after the {design} design: {num} in {folders} folders")
    rooms = ", ".join(c["spec_rooms"]) or "none"  # type: ignore[arg-type]
    print(f"files directly in spec/: {c['spec_flat']}; its subfolders: {rooms}")
    rooms = ", ".join(c["executor_rooms"]) or "none"  # type: ignore[arg-type]
    print(f"files directly in executor/: {c['executor_flat']}; its subfolders: {rooms}")
    print(f"branches on design identity: {c['branches']}; hasattr probes in spec/play.py: {c['play_probes']}")
    print(f"tables listing designs or contracts by name: {len(c['name_tables'])} ({', '.join(c['name_tables'])})")  # type: ignore[arg-type]
    print(f"functions over 60 lines: {c['long_functions']} (of {c['files']} product files)")
    loops = c["run_loops"]
    print(f"run loops (add, cancel, plan/step in one loop): {len(loops)} ({', '.join(loops)})")  # type: ignore[arg-type]
    print(f"cancels typed as (rid, step) tuples: {c['cancel_tuples']}")
    copies = c["prove_then_assume"]
    print(f"prove-then-assume loops in proofs/: {len(copies)} ({', '.join(copies)})")  # type: ignore[arg-type]
    own, literals, mappers = c["string_verdicts"]  # type: ignore[misc]
    print(f"proof result classes with a verdict of their own (a string or bool): {own}; verdict string literals "
          f"in proofs/: {literals}; lines mapping a result's own string or bool to a verdict: {mappers}")


if __name__ == "__main__":
    main()
