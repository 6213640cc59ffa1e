"""Converting step traces recorded in vLLM's own terms into trace v2, for `stallfree check-trace`.

The input (one JSON object per engine step, as recorded from vLLM's V1 scheduler with its real config,
KV cache manager and block pool):

    {"step": 17, "added": [rid, ...], "scheduled": [[rid, num_tokens, "prefill" | "decode"], ...],
     "emitted": [rid, ...], "finished": [rid, ...], "preempted": [rid, ...]}

with the workload beside it (`[{"rid", "arrival_step", "prompt_len", "max_new"}]`, the requests given
to the engine) and its config (`{"token_budget", "max_seqs", "kv_tokens", "block_size"}`).

What the converter adds, and from what:

- `add`: each rid of "added", with its prompt_len and max_new from the workload;
- `preempt`: each rid of "preempted", kind "recompute" (vLLM V1 frees a preempted request's blocks);
- `admit`: a request's (re)admission is the first step it is scheduled after it was added or preempted.
  Its cached prefix is not in the input, so it is inferred: the tokens it knows (prompt plus tokens
  emitted) minus the tokens scheduled from its admission through the step that emits its next token.
  What each inferred prefix rests on is judged by `cache_claims.verify` (checked against the request's
  own blocks, trusted, or refused and written as 0 so that the checker judges the chunks against it:
  PREFILL-ONCE or FIRST-TOKEN then name the step), and `stallfree import-trace` says so;
- `finished`: each rid, reason "length" (the requests ignore EOS and stop at max_new).

The "prefill" / "decode" labels and the input's step numbers are checked for consistency with the
facts above, not copied: a label is vLLM's view, the checker forms its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from stallfree.spec import strictjson

from ..trace.tracefile import TraceError
from ..trace.v2 import EngineConfig, EngineStep
from .cache_claims import CacheClaims, verify

STEP_KEYS = {"step", "added", "scheduled", "emitted", "finished", "preempted"}
CONFIG_KEYS = ("token_budget", "max_seqs", "kv_tokens", "block_size")


MAX_INPUT_BYTES = 256 << 20  # a recorded run is far smaller: /dev/zero or an endless pipe is cut here


def read_capped(path: Path, limit: int = MAX_INPUT_BYTES) -> str:
    """`path`'s text, at most `limit` bytes of it; longer, a ValueError naming the path and the limit
    (an OSError or UnicodeDecodeError as they come)."""
    with path.open("rb") as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: longer than {limit:,} bytes: not a recorded run")
    return data.decode()


def _json(path: Path) -> Any:
    try:
        return strictjson.loads(read_capped(path))
    except ValueError as error:  # bad JSON or bad UTF-8, a key twice, NaN, too deep a nesting
        raise ValueError(f"{path}: not valid JSON: {error}") from None


def load_workload(path: Path) -> dict[Any, tuple[int, int]]:
    """rid -> (prompt_len, max_new), from a workload file."""
    data = _json(path)
    if type(data) is not list:
        raise ValueError(f"{path}: a workload is a list of requests, got {type(data).__name__}")
    requests = {}
    for i, r in enumerate(data):
        try:
            requests[r["rid"]] = (int(r["prompt_len"]), int(r["max_new"]))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: request {i} needs rid, prompt_len, max_new ({error})") from None
    return requests


def load_config(path: Path) -> EngineConfig:
    data = _json(path)
    missing = [k for k in CONFIG_KEYS if type(data) is not dict or k not in data]
    if missing:
        raise ValueError(f"{path}: a config needs {', '.join(CONFIG_KEYS)} (missing {missing})")
    for key in CONFIG_KEYS:
        if type(data[key]) is not int or data[key] < 1:
            raise ValueError(f"{path}: {key} must be an int >= 1, got {data[key]!r}")
    return EngineConfig(*(data[k] for k in CONFIG_KEYS))


def read_steps(lines: Iterable[str]) -> list[dict[str, Any]]:
    steps = []
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            data = strictjson.loads(text)
        except ValueError as error:  # json's errors, a key twice, NaN, too deep a nesting
            raise TraceError(number, f"not valid JSON: {error}") from None
        if type(data) is not dict or not STEP_KEYS.issuperset(data) or "scheduled" not in data:
            raise TraceError(number, f"a vLLM step line has the fields {sorted(STEP_KEYS)}, got {str(data)[:80]}")
        if data.get("step") != len(steps):
            raise TraceError(number, f"step must be {len(steps)} (steps count from 0 with no gaps), "
                                     f"got {data.get('step')}")
        for i, entry in enumerate(data["scheduled"]):
            if type(entry) is not list or len(entry) != 3 or entry[2] not in ("prefill", "decode"):
                raise TraceError(number, f"scheduled[{i}] must be [rid, num_tokens, \"prefill\" | \"decode\"], "
                                         f"got {entry!r}")
        steps.append(data)
    return steps


def convert(steps: list[dict[str, Any]], requests: dict[Any, tuple[int, int]]) -> Iterator[EngineStep]:
    """The v2 steps of a vLLM step trace."""
    emitted: dict[Any, int] = {}
    pending: set[Any] = set()  # added or preempted, not scheduled since
    for index, data in enumerate(steps):
        add = []
        for rid in data.get("added", []):
            if rid not in requests:
                raise TraceError(index + 1, f"added names rid {rid!r}, which the workload does not hold")
            add.append((rid, *requests[rid]))
            emitted[rid] = 0
            pending.add(rid)
        preempt = [(rid, "recompute") for rid in data.get("preempted", [])]
        pending.update(rid for rid, _ in preempt)
        admit = []
        for rid, _, _ in data["scheduled"]:
            if rid in pending:
                pending.discard(rid)
                prompt_len = requests[rid][0] if rid in requests else 0
                admit.append((rid, _cached(steps, index, rid, prompt_len + emitted.get(rid, 0))))
        plan = [(rid, n) for rid, n, _ in data["scheduled"]]
        for rid in data.get("emitted", []):
            emitted[rid] = emitted.get(rid, 0) + 1
        finished = [(rid, "length") for rid in data.get("finished", [])]
        yield EngineStep(index, plan, list(data.get("emitted", [])), finished, add, [], {}, admit, preempt)


def _cached(steps: list[dict[str, Any]], start: int, rid: Any, known: int) -> int:
    """Tokens of `rid` found cached at its admission in step `start`: what it knows minus what it computes
    from there through the step that emits its next token."""
    computed = 0
    for data in steps[start:]:
        computed += sum(n for r, n, _ in data["scheduled"] if r == rid)
        if rid in data.get("emitted", []):
            return known - computed
    return 0  # it never emits again: nothing to infer from


def whole_blocks(steps: Iterable[EngineStep], block_size: int) -> Iterator[EngineStep]:
    """`steps` with each inferred cached prefix judged by what it rests on (`cache_claims.verify`): one
    no cache could have held (negative, not whole blocks, longer than any request had in KV) is
    written as 0."""
    return verify(steps, block_size, CacheClaims())
