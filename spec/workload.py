"""A workload: a config and requests that arrive before given steps; JSON in and out. `play` (in
`stallfree.spec.play`) runs one through any scheduler under the monitor.

JSON form (what `stallfree trace --workload` reads and counterexamples are printed as):

    {"config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64},
     "requests": [{"rid": 0, "prompt_len": 8, "max_new": 16, "arrival_step": 0, "stop_after": 5}, ...],
     "cancels": [{"rid": 0, "step": 3}, {"rid": 1, "step": 4, "pending": true}]}

A request is added just before the step numbered `arrival_step` (steps count from 0), in list order.
Request fields are passed to add() as written, so a workload may hold requests the contract refuses.

Two optional parts serve the variants' contracts: a request's `"priority"` (passed to
add(rid, prompt_len, max_new, priority); `stallfree.spec.variants.priority`), and `"budgets"`, a budget
schedule `[{"step": 3, "token_budget": 2}, ...]`: set_budget(token_budget) is called just before the
step numbered `step`, before that step's arrivals (`stallfree.spec.variants.budget_change`). Both are left out
of the JSON when absent, so a workload of the reference's contract reads as it always did.

`content` (optional, the prefix-caching design's): the request's leading tokens as [content_id,
length] segments (`stallfree.prefix.contract.keys`), passed as add(rid, prompt_len, max_new, content).

`stop_after` (optional): the request stops on its `stop_after`-th token, as a model sampling its end
token would (complete() is told so on that step); without it, or at or past max_new, it runs to max_new.
A cancel is offered just before step `step` is planned (after that step's arrivals), or, with
"pending": true, while that step's plan is pending; one of a rid that is not waiting or running then
must be refused. A workload without "cancels" and "stop_after" is the plain protocol's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import strictjson
from .errors import FieldTypeError, InvalidField
from .types import Config, check_int

MAX_ARRIVAL_STEP = 10**7  # a workload is a test, not a day of traffic: bounds the idle steps run


def _check_step(field: str, value: object) -> None:
    check_int(field, value, minimum=0)
    if value > MAX_ARRIVAL_STEP:  # type: ignore[operator]
        raise InvalidField(f"{field} must be <= {MAX_ARRIVAL_STEP}, got {value}")


@dataclass(frozen=True, slots=True)
class Arrival:
    rid: Any
    prompt_len: Any
    max_new: Any
    arrival_step: int = 0
    priority: Any = None  # None: add() is called without one
    stop_after: int | None = None  # the token it stops on (its real output length); None: max_new
    content: Any = None  # the prefix design's (content_id, length) segments; None: add() is called without

    def __post_init__(self) -> None:
        _check_step("arrival_step", self.arrival_step)
        if self.stop_after is not None:
            check_int("stop_after", self.stop_after)

    def to_json(self) -> dict[str, Any]:
        """Optional fields are left out when absent, so a plain workload reads as it always did."""
        data = {"rid": self.rid, "prompt_len": self.prompt_len, "max_new": self.max_new,
                "arrival_step": self.arrival_step}
        for name in OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data


@dataclass(frozen=True, slots=True)
class Cancel:
    """cancel(rid) offered before step `step` is planned, or while its plan is pending."""

    rid: Any
    step: int
    pending: bool = False

    def __post_init__(self) -> None:
        _check_step("step", self.step)
        if type(self.pending) is not bool:
            raise InvalidField(f"pending must be true or false, got {self.pending!r:.40}")


@dataclass(frozen=True, slots=True)
class BudgetChange:
    """set_budget(token_budget) just before step `step`. The value is passed as written, so a
    schedule may hold a budget the contract refuses."""

    step: int
    token_budget: Any

    def __post_init__(self) -> None:
        _check_step("step", self.step)


@dataclass(frozen=True, slots=True)
class Workload:
    config: Config
    requests: tuple[Arrival, ...] = ()
    budgets: tuple[BudgetChange, ...] = ()  # in step order
    cancels: tuple[Cancel, ...] = ()

    @property
    def has_stops(self) -> bool:
        return any(a.stop_after is not None for a in self.requests)

    def to_json(self) -> dict[str, Any]:
        c = self.config  # by hand, not dataclasses.asdict: the kit sends every workload it draws to its worker
        data: dict[str, Any] = {"config": {"token_budget": c.token_budget, "max_seqs": c.max_seqs,
                                           "kv_tokens": c.kv_tokens}, "requests": [a.to_json() for a in self.requests]}
        if self.budgets:
            data["budgets"] = [{"step": b.step, "token_budget": b.token_budget} for b in self.budgets]
        if self.cancels:
            data["cancels"] = [{"rid": c.rid, "step": c.step, "pending": c.pending} for c in self.cancels]
        return data

    def dumps(self) -> str:
        return json.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: object) -> Workload:
        """Build from parsed JSON; errors name the field path and the value."""
        if not isinstance(data, dict):
            raise InvalidField(f"workload must be a JSON object, got {type(data).__name__}")
        _no_unknown("workload", data, WORKLOAD_FIELDS)
        config = data.get("config")
        if not isinstance(config, dict):
            raise InvalidField(
                f"workload.config must be an object with token_budget, max_seqs, kv_tokens; got {config!r:.80}"
            )
        try:
            cfg = Config(config.get("token_budget"), config.get("max_seqs"), config.get("kv_tokens"))  # type: ignore[arg-type]
        except (InvalidField, FieldTypeError) as error:
            raise type(error)(f"workload.config.{error}") from None
        extra = set(config) - {"token_budget", "max_seqs", "kv_tokens"}
        if extra:
            raise InvalidField(f"workload.config has unknown field(s) {sorted(extra)}")
        requests = data.get("requests", [])
        if not isinstance(requests, list):
            raise InvalidField(f"workload.requests must be a list, got {type(requests).__name__}")
        arrivals = []
        for i, item in enumerate(requests):
            if not isinstance(item, dict):
                raise InvalidField(f"workload.requests[{i}] must be an object, got {item!r:.80}")
            missing = [k for k in ("rid", "prompt_len", "max_new") if k not in item]
            if missing:
                raise InvalidField(f"workload.requests[{i}] lacks field(s) {missing}")
            _no_unknown(f"workload.requests[{i}]", item, REQUEST_FIELDS)  # a typo must not become a default
            try:
                arrivals.append(Arrival(
                    item["rid"], item["prompt_len"], item["max_new"], item.get("arrival_step", 0), item.get("priority"),
                    item.get("stop_after"), item.get("content"),
                ))
            except (InvalidField, FieldTypeError) as error:
                raise type(error)(f"workload.requests[{i}].{error}") from None
        return cls(cfg, tuple(arrivals), budget_schedule(data.get("budgets", [])), _cancels(data.get("cancels", [])))

    @classmethod
    def loads(cls, text: str) -> Workload:
        try:
            data = strictjson.loads(text)
        except ValueError as error:  # json's errors, a key twice, NaN, too deep a nesting
            raise InvalidField(f"workload is not valid JSON: {error}") from None
        return cls.from_json(data)


WORKLOAD_FIELDS = ("config", "requests", "budgets", "cancels")
OPTIONAL_FIELDS = ("priority", "stop_after", "content")  # left out of the JSON when None
REQUEST_FIELDS = ("rid", "prompt_len", "max_new", "arrival_step", *OPTIONAL_FIELDS)


def _no_unknown(where: str, data: dict[Any, Any], known: tuple[str, ...]) -> None:
    unknown = [k for k in data if k not in known]
    if unknown:
        shown = ", ".join(repr(k)[:40] for k in unknown[:5])
        raise InvalidField(f"{where} has unknown field(s) {shown}; the fields are {', '.join(known)}")


def budget_schedule(items: object) -> tuple[BudgetChange, ...]:
    """The `"budgets"` list of a workload's JSON, sorted by step; errors name the item and the field."""
    if not isinstance(items, list):
        raise InvalidField(f"workload.budgets must be a list, got {type(items).__name__}")
    changes = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or set(item) != {"step", "token_budget"}:
            raise InvalidField(f"workload.budgets[{i}] must be an object with step and token_budget, got {item!r:.80}")
        try:
            changes.append(BudgetChange(item["step"], item["token_budget"]))
        except (InvalidField, FieldTypeError) as error:
            raise type(error)(f"workload.budgets[{i}].{error}") from None
    return tuple(sorted(changes, key=lambda c: c.step))


def _cancels(items: object) -> tuple[Cancel, ...]:
    if not isinstance(items, list):
        raise InvalidField(f"workload.cancels must be a list, got {type(items).__name__}")
    cancels = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "rid" not in item or "step" not in item:
            raise InvalidField(f"workload.cancels[{i}] must be an object with rid and step, got {item!r:.80}")
        unknown = set(item) - {"rid", "step", "pending"}
        if unknown:
            raise InvalidField(f"workload.cancels[{i}] has unknown field(s) {sorted(unknown)}")
        try:
            cancels.append(Cancel(item["rid"], item["step"], item.get("pending", False)))
        except (InvalidField, FieldTypeError) as error:
            raise type(error)(f"workload.cancels[{i}].{error}") from None
    return tuple(cancels)
