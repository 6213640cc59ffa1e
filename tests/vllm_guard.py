"""Tests that need vLLM skip where it is not installed (the main venv), and fail there when
STALLFREE_REQUIRE_VLLM=1 (CI's vLLM venv, scripts/test-vllm.sh): a missing vLLM is then a broken
set-up, never a silent skip."""

from __future__ import annotations

import importlib.util
import os

import pytest

WHY = "vLLM is not installed here: scripts/vllm-venv.sh sets up .venv-vllm, scripts/test-vllm.sh runs these tests"


def require_vllm() -> None:
    """Call at module level, before importing anything that imports vllm."""
    if importlib.util.find_spec("vllm") is not None:
        return
    if os.environ.get("STALLFREE_REQUIRE_VLLM") == "1":
        pytest.fail(f"STALLFREE_REQUIRE_VLLM=1 but {WHY}", pytrace=False)
    pytest.skip(WHY, allow_module_level=True)
