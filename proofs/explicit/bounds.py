"""The bounds of a model check: a config, and the finite universe of requests the environment draws on.

The environment may add any request shape (prompt_len, max_new) of the universe before any step, up
to `num_requests` adds in all. With `never_fit` the universe also holds one shape that exceeds the KV
capacity, so every state is also checked against an add() that must be refused (rule NEVER-FIT).
With `lifecycle` the environment may also stop any emitted token and cancel any request, between
steps or while a plan is pending, and offers a cancel and a stop that must be refused (`lifecycle`).
"""

from __future__ import annotations

from dataclasses import dataclass

from stallfree.spec import Config, InvalidField, check_int

FIELDS = ("token_budget", "max_seqs", "kv_tokens", "num_requests", "max_prompt", "max_new")


@dataclass(frozen=True, slots=True)
class Bounds:
    """B, S, K of the scheduler; at most `num_requests` adds, prompts 1..max_prompt, max_new 1..max_new."""

    token_budget: int
    max_seqs: int
    kv_tokens: int
    num_requests: int
    max_prompt: int
    max_new: int
    never_fit: bool = True
    lifecycle: bool = False  # stop and cancel actions (the scheduler must support both)

    def __post_init__(self) -> None:
        for name in FIELDS:
            check_int(name, getattr(self, name))

    @property
    def config(self) -> Config:
        return Config(self.token_budget, self.max_seqs, self.kv_tokens)

    def universe(self) -> tuple[tuple[int, int], ...]:
        """Every shape the environment may add: (prompt_len, max_new) pairs, smallest first."""
        shapes = [(p, m) for p in range(1, self.max_prompt + 1) for m in range(1, self.max_new + 1)]
        if self.never_fit:
            shapes.append((self.kv_tokens, 1))  # reserves K + 1: add() must refuse it
        return tuple(shapes)

    def label(self) -> str:
        """The bound as the CLI spells it: B,S,K,R,P,M (and +stops,cancels with lifecycle actions)."""
        return ",".join(str(getattr(self, name)) for name in FIELDS) + ("+stops,cancels" if self.lifecycle else "")

    @classmethod
    def parse(cls, text: str) -> Bounds:
        """B,S,K,R,P,M, e.g. `3,2,8,3,3,2`; errors name the field and the value."""
        parts = text.split(",")
        if len(parts) != len(FIELDS):
            raise InvalidField(f"bound {text!r}: expected {len(FIELDS)} ints {','.join(FIELDS)}")
        values = []
        for name, part in zip(FIELDS, parts, strict=True):
            try:
                values.append(int(part))
            except ValueError:
                raise InvalidField(f"bound {name} must be an int, got {part!r}") from None
        b, s, k, r, p, m = values
        return cls(b, s, k, r, p, m)
