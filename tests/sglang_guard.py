"""Tests that need SGLang skip where it is not installed (the main venv), and fail there when
STALLFREE_REQUIRE_SGLANG=1 (its own venv, scripts/test-sglang.sh): a missing SGLang is then a broken
set-up, never a silent skip."""

from __future__ import annotations

import importlib.util
import os

import pytest

WHY = ("SGLang is not installed here: scripts/sglang-venv.sh sets up .venv-sglang, scripts/test-sglang.sh runs "
       "these tests")


def require_sglang() -> None:
    """Call at module level, before importing anything that imports sglang."""
    if importlib.util.find_spec("sglang") is not None:
        return
    if os.environ.get("STALLFREE_REQUIRE_SGLANG") == "1":
        pytest.fail(f"STALLFREE_REQUIRE_SGLANG=1 but {WHY}", pytrace=False)
    pytest.skip(WHY, allow_module_level=True)  # deliberate: under scripts/test-sglang.sh the line above fails instead
