"""No function of the product is over 60 lines (def line to last line, decorators not counted), nested
functions included. The product is every module outside tests/, benchmarks/, docs/, scripts/ and src/ (links to it)
(and build or hidden folders). Read with `ast`, so a function is measured as the parser sees it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60
NOT_PRODUCT = {"tests", "benchmarks", "docs", "scripts", "src", "build", "mutants", "node_modules"}  # src/: links


def product_modules(root: Path = ROOT) -> list[Path]:
    """Every .py file of the product under `root`."""
    return sorted(
        f for f in root.rglob("*.py")
        if not set(f.relative_to(root).parts) & NOT_PRODUCT
        and not any(p.startswith(".") for p in f.relative_to(root).parts)
    )


def long_functions(source: str, name: str, limit: int = MAX_LINES) -> list[str]:
    """'name:line function (n lines)' for each function of `source` longer than `limit` lines."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    return found


def generated(name: str, num_lines: int, nested: bool = False) -> str:
    """The source of a function `name` exactly `num_lines` lines long (inside a class, as a method, when
    `nested`)."""
    body = [f"    x{i} = {i}" for i in range(num_lines - 2)] + ["    return x0"]
    lines = [f"def {name}():", *body]
    if nested:
        lines = ["class Holder:", *(f"    {line}" for line in lines)]
    return "\n".join(lines) + "\n"


def test_no_product_function_is_over_60_lines() -> None:
    modules = product_modules()
    names = {str(f.relative_to(ROOT)) for f in modules}
    assert {"spec/play.py", "cli/commands/trace.py", "proofs/smt/compiled.py"} <= names  # the scan sees the product
    assert not any(n.startswith(("tests/", "scripts/", "benchmarks/", "docs/")) for n in names)
    found = [hit for f in modules for hit in long_functions(f.read_text(), str(f.relative_to(ROOT)))]
    assert not found, "functions over 60 lines (split each by concept):\n" + "\n".join(found)


def test_the_check_flags_a_function_of_61_lines_and_passes_one_of_60() -> None:
    assert long_functions(generated("at_limit", 60), "gen.py") == []
    assert long_functions(generated("over_limit", 61), "gen.py") == ["gen.py:1 over_limit (61 lines)"]
    assert long_functions(generated("method", 61, nested=True), "gen.py") == ["gen.py:2 method (61 lines)"]
    source = "def outer():\n" + "".join(f"    {line}\n" for line in generated("inner", 61).splitlines()) + \
        "    return inner\n"
    assert [hit.split()[1] for hit in long_functions(source, "gen.py")] == ["outer", "inner"]


def test_the_scan_finds_a_long_function_written_into_a_product_folder(tmp_path: Path) -> None:
    (tmp_path / "spec").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "spec" / "long.py").write_text(generated("too_long", 75))
    (tmp_path / "tests" / "long.py").write_text(generated("a_test", 75))  # tests are not the product
    modules = product_modules(tmp_path)
    assert [str(f.relative_to(tmp_path)) for f in modules] == ["spec/long.py"]
    assert long_functions(modules[0].read_text(), "spec/long.py") == ["spec/long.py:1 too_long (75 lines)"]
