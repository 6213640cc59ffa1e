"""Under the test command every extra is installed, so tests that skip when an extra is missing
(importorskip) would hide a broken install: this fails instead."""

from __future__ import annotations

import importlib
import os

import pytest

EXTRAS = ["torch", "safetensors", "numpy", "z3", "crosshair", "hypothesis", "matplotlib"]


@pytest.mark.parametrize("module", EXTRAS)
def test_extra_is_importable_under_the_test_command(module: str) -> None:
    if os.environ.get("STALLFREE_REQUIRE_EXTRAS") != "1":
        pytest.skip("not under scripts/test.sh: extras are optional")
    importlib.import_module(module)
