"""The kit's two outer clocks, each set by an argument, else an environment variable, else a default.

- load timeout: seconds the target's import may take in the worker (vLLM's import and first config
  build take 10-20 s on a quiet machine and several times that on a loaded CI runner);
  `--load-timeout` / STALLFREE_LOAD_TIMEOUT, default 300.
- run timeout: seconds one workload may take in the worker before the kit stops it from outside;
  `--run-timeout` / STALLFREE_RUN_TIMEOUT, default 30 + 20 per-call timeouts.

A bad value (not a number, not > 0, over a day) is a ValueError naming the argument or the variable and
the value, raised before any worker starts.
"""

from __future__ import annotations

import math
import os

LOAD_TIMEOUT_ENV = "STALLFREE_LOAD_TIMEOUT"
RUN_TIMEOUT_ENV = "STALLFREE_RUN_TIMEOUT"
DEFAULT_LOAD_TIMEOUT = 300.0  # seconds: generous for a loaded CI machine importing a real engine
MAX_TIMEOUT = 86_400.0  # a day: more is a typo, not a timeout


def default_run_timeout(timeout: float) -> float:
    """Seconds one workload may take: generous, as the kit's workloads are a few hundred steps."""
    return 30.0 + 20.0 * timeout


def load_timeout(value: float | None = None) -> float:
    """The load timeout: `value` if given, else STALLFREE_LOAD_TIMEOUT if set, else the default."""
    if value is not None:
        return checked("load_timeout", value)
    return from_environment(LOAD_TIMEOUT_ENV, DEFAULT_LOAD_TIMEOUT)


def run_timeout(value: float | None, timeout: float) -> float:
    """The run timeout: `value` if given, else STALLFREE_RUN_TIMEOUT if set, else from the per-call `timeout`."""
    if value is not None:
        return checked("run_timeout", value)
    return from_environment(RUN_TIMEOUT_ENV, default_run_timeout(timeout))


def from_environment(name: str, default: float) -> float:
    """The seconds in environment variable `name`, or `default` when it is unset or empty."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not _in_range(value):
        raise ValueError(f"environment variable {name}={text!r} must be seconds > 0 and at most {MAX_TIMEOUT:g}")
    return value


def checked(name: str, value: float) -> float:
    """`value` if it is a number of seconds > 0 and at most a day; else a ValueError naming `name`."""
    if type(value) not in (int, float) or not _in_range(value):
        raise ValueError(f"{name} must be seconds > 0 and at most {MAX_TIMEOUT:g}, got {value!r}")
    return float(value)


def _in_range(value: float) -> bool:
    return math.isfinite(value) and 0 < value <= MAX_TIMEOUT
