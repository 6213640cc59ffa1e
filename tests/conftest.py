"""Test options: `--deep` runs tests marked `deep` (slow, deep runs CI skips); Hypothesis profiles
`ci` (fast, derandomized) and `deep` (many examples), chosen by HYPOTHESIS_PROFILE or --deep."""

from __future__ import annotations

import json
import os
from pathlib import Path

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


def _skip_deep(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--deep"):
        return
    skip = pytest.mark.skip(reason="deep run: pass --deep")
    for item in items:
        if "deep" in item.keywords:
            item.add_marker(skip)


def _fastest_first_under_mutmut(items: list[pytest.Item]) -> None:
    """In a mutmut run (scripts/mutation.sh), run the fastest tests first: mutmut stops a mutant at
    its first failing test (-x), so a mutant that a quick test kills no longer waits behind the slow
    campaigns. The same tests run either way; only their order changes. Durations come from mutmut's
    own stats file, in the folder it runs pytest from."""
    stats = Path("mutmut-stats.json")
    if "MUTANT_UNDER_TEST" not in os.environ or not stats.is_file():
        return
    duration: dict[str, float] = json.loads(stats.read_text()).get("duration_by_test", {})
    items.sort(key=lambda item: duration.get(item.nodeid, 0.0))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _skip_deep(config, items)
    _fastest_first_under_mutmut(items)
