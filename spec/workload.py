"""A workload: a config and requests that arrive before given steps; JSON in and out. `play` (in
`stallfree.spec.play`) runs one through any scheduler under the monitor.

JSON form (what `stallfree trace --workload` reads and counterexamples are printed as):

    {"config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64},
     "requests": [{"rid": 0, "prompt_len": 8, "max_new": 16, "arrival_step": 0}, ...]}

A request is added just before the step numbered `arrival_step` (steps count from 0), in list order.
Request fields are passed to add() as written, so a workload may hold requests the contract refuses.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from .errors import FieldTypeError, InvalidField
from .types import Config, check_int

MAX_ARRIVAL_STEP = 10**7  # a workload is a test, not a day of traffic: bounds the idle steps run


@dataclass(frozen=True, slots=True)
class Arrival:
    rid: Any
    prompt_len: Any
    max_new: Any
    arrival_step: int = 0

    def __post_init__(self) -> None:
        check_int("arrival_step", self.arrival_step, minimum=0)
        if self.arrival_step > MAX_ARRIVAL_STEP:
            raise InvalidField(f"arrival_step must be <= {MAX_ARRIVAL_STEP}, got {self.arrival_step}")


@dataclass(frozen=True, slots=True)
class Workload:
    config: Config
    requests: tuple[Arrival, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"config": asdict(self.config), "requests": [asdict(a) for a in self.requests]}

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
                arrivals.append(Arrival(item["rid"], item["prompt_len"], item["max_new"], item.get("arrival_step", 0)))
            except (InvalidField, FieldTypeError) as error:
                raise type(error)(f"workload.requests[{i}].{error}") from None
        return cls(cfg, tuple(arrivals))

    @classmethod
    def loads(cls, text: str) -> Workload:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise InvalidField(f"workload is not valid JSON: {error}") from None
        return cls.from_json(data)


WORKLOAD_FIELDS = ("config", "requests")
REQUEST_FIELDS = ("rid", "prompt_len", "max_new", "arrival_step")


def _no_unknown(where: str, data: dict[Any, Any], known: tuple[str, ...]) -> None:
    unknown = [k for k in data if k not in known]
    if unknown:
        shown = ", ".join(repr(k)[:40] for k in unknown[:5])
        raise InvalidField(f"{where} has unknown field(s) {shown}; the fields are {', '.join(known)}")
