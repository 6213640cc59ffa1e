"""The values of the contract: a config, a request, a plan entry. All validated, all immutable.

Validation is strict: an int is an int (a bool is not, a float is not, even 3.0), each field is at
least its minimum and at most MAX_INT (so every value fits an int64 tensor in the executor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .errors import FieldTypeError, InvalidField

MAX_INT = 2**63 - 1  # the largest value of any field: it must fit an int64


def check_int(field: str, value: object, minimum: int = 1) -> int:
    """Return `value` if it is an int in [minimum, MAX_INT]; raise naming `field` and `value` if not."""
    if type(value) is not int:  # exact type: refuses bool (a subclass of int) and int-like floats
        raise FieldTypeError(f"{field} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise InvalidField(f"{field} must be >= {minimum}, got {value}")
    if value > MAX_INT:
        raise InvalidField(f"{field} must be <= 2**63-1, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class Config:
    """The three limits of a scheduler: token budget B, slots S, KV capacity K (in tokens)."""

    token_budget: int  # B: the most tokens one step may carry, a decode counting 1
    max_seqs: int  # S: the most requests admitted and unfinished at once
    kv_tokens: int  # K: KV capacity; a request reserves prompt_len + max_new of it at admission

    def __post_init__(self) -> None:
        check_int("token_budget", self.token_budget)
        check_int("max_seqs", self.max_seqs)
        check_int("kv_tokens", self.kv_tokens)


@dataclass(frozen=True, slots=True)
class Request:
    """One request: a unique `rid`, a prompt of `prompt_len` tokens, `max_new` tokens to emit."""

    rid: int
    prompt_len: int
    max_new: int

    def __post_init__(self) -> None:
        rid, prompt_len, max_new = self.rid, self.prompt_len, self.max_new
        if type(rid) is int and type(prompt_len) is int and type(max_new) is int and 0 <= rid <= MAX_INT and \
                1 <= prompt_len <= MAX_INT and 1 <= max_new <= MAX_INT:
            return  # every field in range: what the three checks below pass, in one test (a request per add)
        check_int("rid", self.rid, minimum=0)
        check_int("prompt_len", self.prompt_len)
        check_int("max_new", self.max_new)

    @property
    def reservation(self) -> int:
        """The KV tokens this request holds from admission until it finishes (rule KV)."""
        return self.prompt_len + self.max_new


def admissible(request: Request, config: Config) -> Request:
    """Return `request` if it can ever run under `config`; raise InvalidField if not (rule NEVER-FIT).

    A request whose reservation exceeds K could never be admitted, and since admission is first come
    first served it would block every request behind it forever.
    """
    if request.reservation > config.kv_tokens:
        raise InvalidField(
            f"prompt_len + max_new = {request.prompt_len} + {request.max_new} = {request.reservation} "
            f"exceeds kv_tokens={config.kv_tokens} (rid {request.rid} could never be admitted)"
        )
    return request


class Entry(NamedTuple):
    """One entry of a plan: request `rid` gets `n` tokens this step.

    A chunk (the next `n` prompt positions) while the request is in prefill; a decode (`n == 1`)
    once its prompt is done. A NamedTuple so that it unpacks as `(rid, n)`, as the plain protocol asks.
    """

    rid: int
    n: int


@dataclass(frozen=True, slots=True)
class Plan:
    """The entries of one step, in the order they took the budget. A sequence of `Entry`.

    `step` numbers the plan so that a stale or foreign plan can be told from the pending one.
    """

    step: int
    entries: tuple[Entry, ...]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: int) -> Entry:
        return self.entries[index]

    @property
    def num_tokens(self) -> int:
        """Tokens this step carries (rule BUDGET): chunk sizes plus one per decode."""
        return sum(n for _, n in self.entries)
