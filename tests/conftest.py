"""Test options: `--deep` runs tests marked `deep` (slow, deep runs CI skips); Hypothesis profiles
`ci` (fast, derandomized) and `deep` (many examples), chosen by HYPOTHESIS_PROFILE or --deep."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep", max_examples=3000, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=100, deadline=None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--deep", action="store_true", help="run slow, deep tests (marker `deep`)")


def pytest_configure(config: pytest.Config) -> None:
    profile = "deep" if config.getoption("--deep") else os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(profile)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--deep"):
        return
    skip = pytest.mark.skip(reason="deep run: pass --deep")
    for item in items:
        if "deep" in item.keywords:
            item.add_marker(skip)
