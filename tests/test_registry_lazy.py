"""The paged and prefix designs are built on first use (spec/block_designs.py): a conformance worker
judging the reservation design never imports their monitors, shadows or rules; asking for either
design, or for every design, builds it, in the same order as before."""

from __future__ import annotations

import subprocess
import sys

BLOCK_MODULES = "any(m.startswith(('stallfree.spec.paged', 'stallfree.prefix.contract')) for m in sys.modules)"


def imports_block_designs(code: str) -> bool:
    done = subprocess.run([sys.executable, "-c", f"import sys\n{code}\nprint({BLOCK_MODULES})"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def test_the_worker_imports_no_block_design() -> None:
    assert not imports_block_designs("import stallfree.conformance.isolation.worker\n"
                                     "from stallfree.spec import registry\nregistry.contract('reservation')")


def test_the_control_asking_for_a_block_design_imports_it() -> None:
    assert imports_block_designs("from stallfree.spec import registry\nregistry.contract('paged')")
    assert imports_block_designs("from stallfree.spec import registry\nregistry.designs()")


def test_the_designs_and_names_keep_their_order() -> None:
    from stallfree.spec import registry

    assert [d.name for d in registry.designs()][:3] == ["reservation", "paged", "prefix"]
    assert registry.names()[:4] == ("reservation", "paged", "prefix", "aligned")
    assert registry.PAGED is registry.contract("paged") and registry.PREFIX.name == "prefix"
    assert registry.knows("paged") and "paged" not in [v.name for v in registry.variants()]
