"""Argument types shared by subcommands: they fail with the field and the value."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import Any

from stallfree.spec import RULE_IDS, Arrival


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {value}")
    return value


def request_spec(text: str) -> Arrival:
    """RID:PROMPT:MAX_NEW[@ARRIVAL_STEP], e.g. 1:20:4@1."""
    body, _, at = text.partition("@")
    parts = body.split(":")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"--request {text!r}: expected RID:PROMPT_LEN:MAX_NEW[@ARRIVAL_STEP]")
    try:
        rid, prompt_len, max_new = (int(p) for p in parts)
        step = int(at) if at else 0
        return Arrival(rid, prompt_len, max_new, step)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--request {text!r}: {error}") from None


def rule_list(text: str) -> list[str]:
    ids = [t.strip().upper() for t in text.split(",") if t.strip()]
    unknown = [i for i in ids if i not in RULE_IDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown rule ID(s) {unknown}; the rules are {', '.join(RULE_IDS)}")
    return ids


def load_factory(target: str) -> Callable[..., Any]:
    """Import MODULE:FACTORY the way Python imports (the current directory first)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"scheduler {target!r}: expected MODULE:FACTORY, e.g. stallfree.reference:Scheduler")
    if "" not in sys.path:
        sys.path.insert(0, "")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"scheduler {target!r}: {attr} is not callable")
    return obj  # type: ignore[no-any-return]
