"""Trace format v2: what a real engine (preempting, paging its KV, reusing cached prefixes, stopping
requests early) writes so that `stallfree check-trace` judges it. Version 1 traces are read too.

    {"stallfree_trace": 2, "config": {"token_budget": 32, "max_seqs": 8, "kv_tokens": 80, "block_size": 16},
     "meta": {"engine": "vllm 0.33.0"}}
    {"step": 0, "add": [["a", 16, 24], ["b", 16, 24]], "admit": [["a", 0], ["b", 0]],
     "plan": [["a", 16], ["b", 16]], "emitted": ["a", "b"], "finished": []}
    ...
    {"step": 17, "preempt": [["b", "recompute"]], "plan": [["a", 1]], "emitted": ["a"], "finished": []}
    ...
    {"step": 24, "admit": [["b", 32]], "plan": [["b", 1]], "emitted": ["b"], "finished": []}
    {"step": 40, "plan": [["b", 1]], "emitted": ["b"], "finished": [["b", "length"]], "x": {"vllm": {"free_blocks": 5}}}
    {"end": true}

What v2 adds to v1 (`tracefile`), field by field (the schema is `trace-v2.schema.json`, shipped beside
this module):

- rids are ints >= 0 or non-empty strings (at most 256 characters);
- `config.block_size` (optional): the engine pages its KV in blocks of this many tokens. The rules of
  the reservation design (KV's reservation at admission) are then not judged, and say so;
- a step's `config` (optional): a runtime change of any config field, in force from this step on;
- `admit`: `[rid, cached]`, the requests (re)admitted in this step, with the tokens of their KV found
  in a prefix cache (0: none). A request planned without an `admit` event is admitted with none;
- `preempt`: `[rid, kind]`, the requests this step's scheduling preempted, before its plan ran; kind is
  "recompute" (their KV is freed; on re-admission they compute again all but the cached tokens) or
  "swap" (their KV is kept elsewhere and comes back whole);
- `finished`: each a rid (reason "length") or `[rid, reason]` with reason "length" (all max_new tokens
  emitted), "stop" (a stop condition such as EOS ended it earlier) or "cancel" (the client withdrew it;
  a cancelled request not in the step's plan was withdrawn before the step);
- `ran` (optional, only `false`): the step was written before it ran and never finished (the engine
  stopped in it). Its plan, admissions and preemptions are judged, not its tokens: `emitted` must be
  empty, and nothing may follow it, not even the end line;
- `x` (optional, on any line): engine-specific facts, an object of objects keyed by the engine's name.
  The checker keeps and does not judge it. Every other unknown field is still an error, so a typo is
  never silently ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import IO, Any

from stallfree.spec import MAX_INT

from . import tracefile
from .tracefile import TraceError, _int, _list, _load, _show

VERSION = 2
HEADER_KEYS = {tracefile.FORMAT_KEY, "config", "meta", "x"}
STEP_KEYS = {"step", "add", "refuse", "config", "admit", "preempt", "plan", "emitted", "finished", "ran", "x"}
END_KEYS = {"end", "refuse", "x"}
CONFIG_KEYS = ("token_budget", "max_seqs", "kv_tokens")
OPTIONAL_CONFIG_KEYS = ("block_size",)
PREEMPT_KINDS = ("recompute", "swap")
FINISH_REASONS = ("length", "stop", "cancel")
MAX_RID_CHARS = 256
SCHEMA = "trace-v2.schema.json"
# How a step line begins, compact or as json.dumps writes it by default, as text and as bytes (`_v2_records`).
STEP_HEADS = (('{"step":%d,', '{"step": %d, '), (b'{"step":%d,', b'{"step": %d, '))

Rid = int | str


def schema() -> dict[str, Any]:
    """The JSON Schema of a v2 line (header, step or end), shipped in the package."""
    return json.loads(resources.files(__package__).joinpath(SCHEMA).read_text())  # type: ignore[no-any-return]


@dataclass(slots=True)
class EngineConfig:
    token_budget: int
    max_seqs: int
    kv_tokens: int
    block_size: int | None = None  # None: the engine reserves KV per request (the contract's design)

    @property
    def paged(self) -> bool:
        return self.block_size is not None


@dataclass(slots=True)
class EngineStep:
    step: int
    plan: list[tuple[Rid, int]]
    emitted: list[Rid]
    finished: list[tuple[Rid, str]]
    add: list[tuple[Rid, int, int]] = field(default_factory=list)
    refuse: list[list[Any]] = field(default_factory=list)
    config: dict[str, int] = field(default_factory=dict)
    admit: list[tuple[Rid, int]] = field(default_factory=list)
    preempt: list[tuple[Rid, str]] = field(default_factory=list)
    x: dict[str, Any] = field(default_factory=dict)
    ran: bool = True  # False: written before it ran, and the engine never finished it


@dataclass(slots=True)
class EngineEnd:
    refuse: list[list[Any]] = field(default_factory=list)
    x: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Header:
    version: int
    config: EngineConfig
    meta: dict[str, Any] = field(default_factory=dict)
    x: dict[str, Any] = field(default_factory=dict)


# -- reading -----------------------------------------------------------------------------------------------


def version_of(text: str | bytes) -> int:
    """The format version a header line declares (1 or 2); TraceError for anything else."""
    data = _load(1, text)
    version = data.get(tracefile.FORMAT_KEY)
    if version not in (1, VERSION) or type(version) is not int:
        raise TraceError(1, f'the header must have "{tracefile.FORMAT_KEY}": 1 or 2, got {_show(version)}')
    return version


def read(lines: Iterable[bytes | str]) -> tuple[Header, Iterator[tuple[int, EngineStep | EngineEnd]]]:
    """The header, and the numbered lines after it as v2 records, whatever the version (v1 lines are
    read by the v1 reader and carried over unchanged in meaning)."""
    numbered = enumerate(lines, 1)
    first = next(numbered, None)
    if first is None:
        raise TraceError(1, "the trace is empty: the header line is missing")
    if version_of(first[1]) == 1:
        config = tracefile.parse_header(first[1])
        header = Header(1, EngineConfig(config.token_budget, config.max_seqs, config.kv_tokens))
        return header, _v1_records(numbered)
    return parse_header(first[1]), _v2_records(numbered)


def _v1_records(numbered: Iterator[tuple[int, bytes | str]]) -> Iterator[tuple[int, EngineStep | EngineEnd]]:
    expected = 0
    for number, text in numbered:
        item = tracefile.parse_line(number, text, expected)
        if isinstance(item, tracefile.TraceEnd):
            yield number, EngineEnd(item.refuse)
            continue
        expected += 1
        yield number, EngineStep(
            item.step, [(rid, n) for rid, n in item.plan], list(item.emitted),
            [(rid, "length") for rid in item.finished], [(r, p, m) for r, p, m in item.add], item.refuse,
        )


def _v2_records(numbered: Iterator[tuple[int, bytes | str]]) -> Iterator[tuple[int, EngineStep | EngineEnd]]:
    """The records after the header. A step line that repeats the last step read but for its number (the
    same text after `{"step":N,`, as a run of decodes writes it) is that step again, under its number: the
    last line was read whole and held no other "step" key, so the same text reads to the same fields."""
    from .fastread import parse_line_v2  # msgspec's shortcut where installed, else parse_line (fastread imports v2)

    expected = 0
    last: EngineStep | None = None  # the last step read, when its line began with a head of `STEP_HEADS`
    form: bytes | str = b""  # that head, to be filled with a step number
    rest: bytes | str = b""  # that line after its head
    for number, text in numbered:
        if last is not None and type(text) is type(rest) and text.endswith(rest) \
                and text.startswith(head := form % expected) \
                and len(text) == len(head) + len(rest):
            item: EngineStep | EngineEnd = EngineStep(expected, last.plan, last.emitted, last.finished, last.add,
                                                      last.refuse, last.config, last.admit, last.preempt, last.x,
                                                      last.ran)
        else:
            item = parse_line_v2(number, text, expected)
            last = None
            if type(item) is EngineStep:
                for form in STEP_HEADS[type(text) is bytes]:
                    head = form % expected
                    if text.startswith(head):
                        last, rest = item, text[len(head):]
                        break
        if type(item) is EngineStep:
            expected += 1
        yield number, item


def parse_header(text: str | bytes) -> Header:
    data = _load(1, text)
    if data.get(tracefile.FORMAT_KEY) != VERSION:
        raise TraceError(1, f'a v2 header has "{tracefile.FORMAT_KEY}": 2, got {_show(data.get(tracefile.FORMAT_KEY))}')
    _no_unknown(1, "the header", data, HEADER_KEYS)
    config = data.get("config")
    if type(config) is not dict:
        raise TraceError(1, f"config must be an object with {', '.join(CONFIG_KEYS)}; got {_show(config)}")
    _no_unknown(1, "config", config, {*CONFIG_KEYS, *OPTIONAL_CONFIG_KEYS})
    values = {}
    for key in (*CONFIG_KEYS, *OPTIONAL_CONFIG_KEYS):
        if key not in config:
            if key in CONFIG_KEYS:
                raise TraceError(1, f"config lacks {key}")
            continue
        values[key] = _positive(1, f"config.{key}", config[key])
    meta = data.get("meta", {})
    if type(meta) is not dict:
        raise TraceError(1, f"meta must be an object, got {_show(meta)}")
    return Header(VERSION, EngineConfig(**values), meta, _x(1, data))


def parse_line(line: int, text: str | bytes, expected_step: int) -> EngineStep | EngineEnd:
    data = _load(line, text)
    if "step" not in data:
        if data.get("end") is True:
            _no_unknown(line, "the end line", data, END_KEYS)
            return EngineEnd(_refuse(line, data.get("refuse", [])), _x(line, data))
        raise TraceError(line, f'a step line needs "step" (expected {expected_step}); the end line is {{"end": true}}')
    _no_unknown(line, "a step line", data, STEP_KEYS)
    step = data["step"]
    if type(step) is not int or step != expected_step:
        raise TraceError(line, f"step must be {expected_step} (steps count from 0 with no gaps), got {_show(step)}")
    for key in ("plan", "emitted", "finished"):
        if key not in data:
            raise TraceError(line, f"step {step} lacks {key}")
    # Each field is read by a fast path that only says yes (with the value) or no; a field it refuses
    # is read again item by item, to say exactly which item is wrong. The fields are read in the same
    # order either way, so the first wrong one is named as before.
    plan = _pairs_fast(data["plan"])
    if plan is None:
        plan = [(_rid(line, f"plan[{i}] rid", e[0]), _int(line, f"plan[{i}] n", e[1]))
                for i, e in enumerate(_entries(line, "plan", data["plan"], 2, "[rid, n]"))]
    emitted = data["emitted"]
    if not _rids_fast(emitted):
        emitted = [_rid(line, f"emitted[{i}]", rid) for i, rid in enumerate(_list(line, "emitted", emitted))]
    finished = _finished_fast(data["finished"])
    if finished is None:
        finished = [_finish(line, i, item) for i, item in enumerate(_list(line, "finished", data["finished"]))]
    add = [(_rid(line, f"add[{i}] rid", e[0]), _int(line, f"add[{i}] prompt_len", e[1]),
            _int(line, f"add[{i}] max_new", e[2]))
           for i, e in enumerate(_entries(line, "add", data["add"], 3, "[rid, prompt_len, max_new]"))] \
        if "add" in data else []
    admit = [(_rid(line, f"admit[{i}] rid", e[0]), _int(line, f"admit[{i}] cached", e[1]))
             for i, e in enumerate(_entries(line, "admit", data["admit"], 2, "[rid, cached]"))] \
        if "admit" in data else []
    preempt = [(_rid(line, f"preempt[{i}] rid", e[0]), _choice(line, f"preempt[{i}] kind", e[1], PREEMPT_KINDS))
               for i, e in enumerate(_entries(line, "preempt", data["preempt"], 2, "[rid, kind]"))] \
        if "preempt" in data else []
    config = _config_change(line, data["config"]) if "config" in data else {}
    ran = data.get("ran", True)
    if ran is not False and "ran" in data:
        raise TraceError(line, f"ran may only be false (a step that never finished), got {_show(ran)}")
    if ran is False and emitted:
        raise TraceError(line, f"step {step} did not finish (ran: false), yet emitted {_show(data['emitted'])}")
    return EngineStep(step, plan, emitted, finished, add, _refuse(line, data.get("refuse", [])), config, admit,
                      preempt, _x(line, data), ran is not False)


def _config_change(line: int, change: object) -> dict[str, int]:
    if type(change) is not dict:
        raise TraceError(line, f"config must be an object, got {_show(change)}")
    _no_unknown(line, "config", change, {*CONFIG_KEYS, *OPTIONAL_CONFIG_KEYS})
    return {key: _positive(line, f"config.{key}", value) for key, value in change.items()}


def _rid_ok(value: object) -> bool:
    kind = type(value)
    if kind is int:
        return 0 <= value <= MAX_INT  # type: ignore[operator]
    return kind is str and 0 < len(value) <= MAX_RID_CHARS  # type: ignore[arg-type]


def _rids_fast(values: object) -> bool:
    """True if `values` is a list of rids (what the item-by-item reading accepts)."""
    if type(values) is not list:
        return False
    for rid in values:  # noqa: SIM110 (a plain loop: faster than all() over a generator here)
        if not _rid_ok(rid):
            return False
    return True


def _pairs_fast(entries: object) -> list[tuple[Rid, int]] | None:
    """The plan as (rid, n) pairs, or None if any entry is off (then read item by item)."""
    if type(entries) is not list:
        return None
    pairs = []
    for entry in entries:
        if type(entry) is not list or len(entry) != 2:
            return None
        rid, n = entry
        if not _rid_ok(rid) or type(n) is not int or not 0 <= n <= MAX_INT:
            return None
        pairs.append((rid, n))
    return pairs


def _finished_fast(items: object) -> list[tuple[Rid, str]] | None:
    """"finished" when every item is a bare rid (each ended by length), else None."""
    if not _rids_fast(items):
        return None
    return [(rid, "length") for rid in items]  # type: ignore[union-attr]


def _no_unknown(line: int, what: str, data: dict[str, Any], known: set[str]) -> None:
    if not known.issuperset(data):
        unknown = sorted(set(data) - known)
        raise TraceError(line, f"{what} has unknown field(s) {unknown}; the fields are {sorted(known)} "
                               '(an engine\'s own facts go under "x")')


def _positive(line: int, where: str, value: object) -> int:
    if type(value) is not int or not 1 <= value <= MAX_INT:
        raise TraceError(line, f"{where} must be an int in [1, 2**63-1], got {_show(value)}")
    return value


def _rid(line: int, where: str, value: object) -> Rid:
    if type(value) is str and 0 < len(value) <= MAX_RID_CHARS:
        return value
    if type(value) is int and 0 <= value <= MAX_INT:
        return value
    raise TraceError(line, f"{where} must be an int in [0, 2**63-1] or a string of 1 to {MAX_RID_CHARS} "
                           f"characters, got {_show(value)}")


def _choice(line: int, where: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices or type(value) is not str:
        raise TraceError(line, f"{where} must be one of {', '.join(choices)}; got {_show(value)}")
    return value


def _entries(line: int, where: str, value: object, width: int, shape: str) -> list[list[Any]]:
    entries = _list(line, where, value)
    for i, entry in enumerate(entries):
        if type(entry) is not list or len(entry) != width:
            raise TraceError(line, f"{where}[{i}] must be {shape}, got {_show(entry)}")
    return entries


def _finish(line: int, i: int, item: object) -> tuple[Rid, str]:
    if type(item) is list:
        if len(item) != 2:
            raise TraceError(line, f"finished[{i}] must be a rid or [rid, reason], got {_show(item)}")
        reason = _choice(line, f"finished[{i}] reason", item[1], FINISH_REASONS)
        return _rid(line, f"finished[{i}] rid", item[0]), reason
    return _rid(line, f"finished[{i}]", item), "length"


def _refuse(line: int, value: object) -> list[list[Any]]:
    return tracefile._refuse(line, value)


def _x(line: int, data: dict[str, Any]) -> dict[str, Any]:
    x = data.get("x", {})
    if type(x) is not dict or not all(type(v) is dict for v in x.values()):
        raise TraceError(line, f'x must be an object of objects, keyed by engine name; got {_show(x)}')
    return x


# -- writing ----------------------------------------------------------------------------------------------------


class TraceWriterV2:
    """Writes a v2 trace line by line, as the engine runs.

    `provisional(step)` writes a step before it runs (its plan, with nothing emitted yet) and flushes it;
    `step()` of the same step then replaces that line with the whole step. An engine that dies while the
    step runs leaves the provisional line as the trace's last, so the step that killed it is judged. On
    a stream that cannot seek back (a pipe), `provisional` writes nothing and `step` writes once."""

    def __init__(self, out: IO[str], config: EngineConfig, meta: dict[str, Any] | None = None) -> None:
        self.out = out
        self._provisional: tuple[int, int] | None = None  # (step, where its line starts)
        self._last: tuple[int, int] | None = None  # the last whole step written: (step, where its line starts)
        cfg: dict[str, int] = {k: getattr(config, k) for k in CONFIG_KEYS}
        if config.block_size is not None:
            cfg["block_size"] = config.block_size
        header: dict[str, Any] = {tracefile.FORMAT_KEY: VERSION, "config": cfg}
        if meta:
            header["meta"] = meta
        self._write(header)

    def _write(self, data: dict[str, Any]) -> None:
        self.out.write(json.dumps(data, separators=(",", ":")) + "\n")

    def provisional(self, step: EngineStep) -> None:
        """Write `step` before it runs, flushed: marked `"ran": false`, with nothing emitted."""
        try:
            if not self.out.seekable():
                return
            where = self.out.tell()
        except (OSError, ValueError):
            return
        self._write(self._data(replace(step, ran=False, emitted=[])))
        self.out.flush()
        self._provisional = (step.step, where)
        self._last = None

    def step(self, step: EngineStep) -> None:
        if self._provisional is not None:
            number, where = self._provisional
            self._provisional = None
            if number == step.step:
                self.out.seek(where)
                self.out.truncate()
        try:
            self._last = (step.step, self.out.tell()) if self.out.seekable() else None
        except (OSError, ValueError):
            self._last = None
        self._write(self._data(step))

    def amend(self, step: EngineStep) -> bool:
        """Rewrite the last whole step written (the same step number) as `step`; False if it cannot."""
        if self._last is None or self._last[0] != step.step or self._provisional is not None:
            return False
        self.out.seek(self._last[1])
        self.out.truncate()
        self._write(self._data(step))
        return True

    @staticmethod
    def _data(step: EngineStep) -> dict[str, Any]:
        data: dict[str, Any] = {"step": step.step}
        for key, value in (("add", [list(a) for a in step.add]), ("refuse", step.refuse), ("config", step.config),
                           ("preempt", [list(p) for p in step.preempt]), ("admit", [list(a) for a in step.admit])):
            if value:
                data[key] = value
        data["plan"] = [[rid, n] for rid, n in step.plan]
        data["emitted"] = list(step.emitted)
        data["finished"] = [rid if reason == "length" else [rid, reason] for rid, reason in step.finished]
        if not step.ran:
            data["ran"] = False
        if step.x:
            data["x"] = step.x
        return data

    def end(self, x: dict[str, Any] | None = None) -> None:
        self._last = None
        self._write({"end": True, **({"x": x} if x else {})})
