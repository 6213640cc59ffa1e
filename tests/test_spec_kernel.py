"""The kernel names no design: a module directly under spec/ (what a rule, an invariant, an ending, a
chunk, a design's lines are; the watch, the run loop, workloads) imports nothing from a design's room
(spec/reservation/, spec/paged/, spec/variants/, prefix/, paged/, variants/), so a new design builds
on the kernel without reaching into another design. Read from the source as tests/test_layers.py
reads it: lazy, relative and literal importlib imports count."""

from __future__ import annotations

from pathlib import Path

from test_layers import ROOT, imports, module_name, package_dirs

DESIGNS = ("stallfree.spec.reservation", "stallfree.spec.paged", "stallfree.spec.variants", "stallfree.prefix",
           "stallfree.paged", "stallfree.variants")

# The modules of spec/ that assemble designs, and why each may name them. Exact: one that stops
# importing a design leaves this list (test below), so it cannot go stale.
ASSEMBLY = {
    "__init__.py": "the package's front: `stallfree.spec` re-exports the reservation design's names",
    "registry.py": "the registry of designs: it names each one",
    "block_designs.py": "the registry's paged and prefix entries, built on first use: it names them",
}


def design_imports(path: Path, here: str) -> list[str]:
    return [m for m in imports(path, here) if any(m == d or m.startswith(d + ".") for d in DESIGNS)]


def kernel_modules() -> list[Path]:
    return sorted(p for p in (ROOT / "spec").glob("*.py") if p.name not in ASSEMBLY)


def test_no_kernel_module_imports_a_design() -> None:
    folders = package_dirs()
    found = {p.name: design_imports(p, module_name(p, folders)) for p in kernel_modules()}
    assert len(found) >= 15  # the kernel modules, the moved ones (rule, invariant, ending, ...) among them
    assert {"rule.py", "invariant.py", "ending.py", "lines.py", "chunk.py", "returned.py", "calls.py"} <= set(found)
    assert {name: found[name] for name in found if found[name]} == {}


def test_each_assembly_module_does_import_a_design() -> None:
    folders = package_dirs()
    for name in ASSEMBLY:
        path = ROOT / "spec" / name
        assert design_imports(path, module_name(path, folders)), f"spec/{name} names no design: drop it from ASSEMBLY"


def test_the_kernel_check_sees_a_design_import(tmp_path: Path) -> None:
    """Negative control: a kernel module importing the paged design's rules (relative, and lazily
    inside a function) and the reservation room by `from . import` is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("from .paged.rules import PAGED_RULES\nfrom . import reservation\n\n"
                   "def f():\n    from stallfree.variants import Stepwise\n    return Stepwise\n")
    assert design_imports(bad, "stallfree.spec.bad") == [
        "stallfree.spec.paged.rules", "stallfree.spec.reservation", "stallfree.variants"]


def test_a_contract_that_names_no_monitor_is_refused_by_name() -> None:
    import pytest

    from stallfree.reference import Scheduler
    from stallfree.spec.contract import Contract
    from stallfree.spec.registry import RESERVATION
    from stallfree.spec.types import Config

    config = Config(token_budget=4, max_seqs=2, kv_tokens=16)
    with pytest.raises(ValueError, match="contract 'bare' names no monitor"):
        Contract("bare", RESERVATION.rules).watch(Scheduler(4, 2, 16), config)
    assert RESERVATION.watch(Scheduler(4, 2, 16), config) is not None  # the control: one that names its monitor
