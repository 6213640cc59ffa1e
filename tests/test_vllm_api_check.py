"""The check of vLLM's API (conformance/engines/vllm_api.py), on fake vLLM modules: it passes when
every symbol is there, and names the symbol when one is gone or a parameter is renamed. Needs no vLLM."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from types import ModuleType

import pytest

from stallfree.conformance.engines.vllm_api import SYMBOLS, VllmApiMoved, check_vllm_api


def fake_vllm(symbols: tuple[str, ...], version: str = "9.9.9") -> Callable[[str], ModuleType]:
    """An import_module over fake modules holding exactly `symbols` (classes, with the listed parameters)."""
    modules = {"vllm": ModuleType("vllm")}
    modules["vllm"].__version__ = version  # type: ignore[attr-defined]
    for entry in symbols:
        path, paren, params = entry.partition("(")
        module_name, _, qualname = path.partition(":")
        obj: object = modules.setdefault(module_name, ModuleType(module_name))
        for part in qualname.split("."):
            if part not in vars(obj):  # not inherited: object's __init__ is not Scheduler's
                setattr(obj, part, type(part, (), {}))
            obj = getattr(obj, part)
        if paren:
            names = [p.strip() for p in params.rstrip(")").split(",") if p.strip()]
            obj.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
                [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])

    def import_module(name: str) -> ModuleType:
        if name not in modules:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return modules[name]

    return import_module


def symbol_of(entry: str) -> str:
    return entry.partition("(")[0].replace(":", ".")


LEAVES = [s for s in SYMBOLS if not any(symbol_of(t).startswith(symbol_of(s) + ".") for t in SYMBOLS)]


def test_a_complete_fake_passes() -> None:
    check_vllm_api(fake_vllm(SYMBOLS))


@pytest.mark.parametrize("gone", LEAVES)
def test_each_missing_symbol_is_named(gone: str) -> None:
    rest = tuple(s for s in SYMBOLS if s != gone)
    leaf = symbol_of(gone)
    with pytest.raises(VllmApiMoved) as caught:
        check_vllm_api(fake_vllm(rest))
    message = str(caught.value)
    assert f"{leaf} is missing" in message and "vLLM 9.9.9" in message and "0.32.0" in message, message
    assert message.count(" is missing") == 1, message  # only the symbol that is gone


def test_a_renamed_parameter_is_named() -> None:
    entry = "vllm.v1.core.sched.scheduler:Scheduler.update_from_output(scheduler_output, model_runner_output)"
    assert entry in SYMBOLS
    moved = tuple(s.replace("model_runner_output)", "runner_output)") if s == entry else s for s in SYMBOLS)
    with pytest.raises(VllmApiMoved, match=r"Scheduler\.update_from_output takes no parameter "
                                           r"'model_runner_output' \(it takes scheduler_output, runner_output\)"):
        check_vllm_api(fake_vllm(moved))


def test_a_missing_parent_names_each_symbol_under_it() -> None:
    rest = tuple(s for s in SYMBOLS if not s.startswith("vllm.config:CacheConfig"))
    with pytest.raises(VllmApiMoved) as caught:
        check_vllm_api(fake_vllm(rest))
    assert "vllm.config.CacheConfig is missing" in str(caught.value)
    assert "vllm.config.CacheConfig.num_gpu_blocks is missing" in str(caught.value)


def test_a_missing_module_is_named() -> None:
    rest = tuple(s for s in SYMBOLS if not s.startswith("vllm.v1.outputs:"))
    with pytest.raises(VllmApiMoved, match=r"vllm\.v1\.outputs\.ModelRunnerOutput is missing: module vllm\.v1\.out"):
        check_vllm_api(fake_vllm(rest))


def test_a_declared_field_counts_and_an_undeclared_one_does_not() -> None:
    @dataclasses.dataclass
    class Output:
        preempted_req_ids: set[str]

    module = ModuleType("fake")
    module.Output = Output  # type: ignore[attr-defined]
    check_vllm_api(lambda name: module, ["fake:Output.preempted_req_ids"])
    with pytest.raises(VllmApiMoved, match=r"fake\.Output\.resumed_req_ids is missing: Output has no 'resumed_re"):
        check_vllm_api(lambda name: module, ["fake:Output.resumed_req_ids"])
