"""The kit's load and run timeouts: set by flag, else environment variable, else a default fit for a
loaded CI machine; a bad value is exit 2 naming the flag or variable and the value, before any worker."""

from __future__ import annotations

import pytest
from hostile import assert_refused, call

from stallfree.conformance.isolation.sandbox import Sandbox
from stallfree.conformance.isolation.timeouts import DEFAULT_LOAD_TIMEOUT, LOAD_TIMEOUT_ENV, RUN_TIMEOUT_ENV

TARGET = "stallfree.reference:Scheduler"
HANGS = "hostile_import_hangs:Factory"


@pytest.fixture(autouse=True)
def _no_timeouts_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOAD_TIMEOUT_ENV, raising=False)
    monkeypatch.delenv(RUN_TIMEOUT_ENV, raising=False)


def clocks(**kwargs: float) -> tuple[float, float]:
    """(load, run) timeouts of a sandbox that is never started."""
    box = Sandbox(TARGET, **kwargs)  # type: ignore[arg-type]
    try:
        return box.load_timeout, box.run_timeout
    finally:
        box.__exit__()


def test_the_defaults_are_generous_for_a_loaded_machine() -> None:
    assert clocks(timeout=2.0) == (DEFAULT_LOAD_TIMEOUT, 70.0)
    assert DEFAULT_LOAD_TIMEOUT >= 300


def test_the_environment_sets_both_and_an_argument_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOAD_TIMEOUT_ENV, "450")
    monkeypatch.setenv(RUN_TIMEOUT_ENV, " 12.5 ")
    assert clocks(timeout=2.0) == (450.0, 12.5)
    assert clocks(timeout=2.0, load_timeout=7, run_timeout=8) == (7.0, 8.0)


def test_the_load_timeout_flag_stops_a_hanging_import(capsys: pytest.CaptureFixture[str]) -> None:
    ran = call(["conform", HANGS, "--quiet", "--load-timeout", "2"], capsys)
    assert_refused(ran, f"target {HANGS!r}", "did not finish within 2 s", "hostile_import_hangs.py")


def test_the_load_timeout_variable_stops_a_hanging_import(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOAD_TIMEOUT_ENV, "2")
    ran = call(["conform", HANGS, "--quiet"], capsys)
    assert_refused(ran, f"target {HANGS!r}", "did not finish within 2 s")


@pytest.mark.parametrize("name", [LOAD_TIMEOUT_ENV, RUN_TIMEOUT_ENV])
@pytest.mark.parametrize("value", ["soon", "0", "-5", "nan", "inf", "1e9"])
def test_a_bad_variable_is_exit_2_naming_it_and_its_value(name: str, value: str, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, value)
    ran = call(["conform", HANGS, "--quiet", "--examples", "1"], capsys)  # refused before the import could hang
    assert_refused(ran, name, value)


@pytest.mark.parametrize("flag", ["--load-timeout", "--run-timeout"])
@pytest.mark.parametrize("value", ["soon", "0", "-5", "nan"])
def test_a_bad_flag_is_exit_2_naming_it_and_its_value(flag: str, value: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    ran = call(["conform", HANGS, "--quiet", flag, value], capsys)
    assert ran.status == 2
    assert flag in ran.err and value in ran.err, ran.err


@pytest.mark.parametrize("kwargs", [{"load_timeout": 0}, {"run_timeout": -1.0}, {"load_timeout": float("nan")}])
def test_a_bad_argument_names_it(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        clocks(**kwargs)
