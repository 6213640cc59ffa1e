"""The contracts of `contracts`, with the same preconditions and postconditions, run on the broken
copies of `planted`: one function per rule, named after it. CrossHair must find each bug, naming the
planted size, which shows that rule's postcondition can fail. `TARGETS` maps a rule to its function,
as a `crosshair check` target. (CrossHair reads preconditions from a function's own leading asserts,
so each function repeats its contract's.)"""

from __future__ import annotations

# The search on each planted copy is bounded by a count of paths, not by seconds: CrossHair's search is
# seeded, so it finds the same bug at the same path on any machine, each within 283 (DECODE-FIRST)
# (proofs.contracts.run.PLANTED_ITERATIONS; docs/proofs.md).
# crosshair: max_iterations=1000
from collections.abc import Callable

from .contracts import (
    LIMIT,
    MAX_BUDGET,
    MAX_NEW,
    MAX_SLOTS,
    add_accepts_exactly_what_fits,
    complete_emits_on_time,
    keeps_never_fit,
    keeps_the_limits,
    keeps_the_policy,
    keeps_time,
    schedule_follows_the_policy,
    schedule_keeps_the_limits,
)
from .planted import PLANTED


def add_NEVER_FIT(kv_tokens: int, prompt_len: int, max_new: int) -> None:
    assert 1 <= kv_tokens <= LIMIT
    assert 1 <= prompt_len <= LIMIT and 1 <= max_new <= LIMIT
    keeps_never_fit(PLANTED["NEVER-FIT"], kv_tokens, prompt_len, max_new)


def schedule_BUDGET(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                    p1: int, m1: int, p2: int, m2: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_limits(PLANTED["BUDGET"], (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def schedule_ONE_ENTRY(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                       p1: int, m1: int, p2: int, m2: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_limits(PLANTED["ONE-ENTRY"], (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def schedule_SLOTS(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                   p1: int, m1: int, p2: int, m2: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_limits(PLANTED["SLOTS"], (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def schedule_KV(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                p1: int, m1: int, p2: int, m2: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_limits(PLANTED["KV"], (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def schedule_FCFS(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                  p1: int, m1: int, p2: int, m2: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_limits(PLANTED["FCFS"], (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def policy_DECODE_FIRST(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                        p1: int, m1: int, p2: int, m2: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_policy(PLANTED["DECODE-FIRST"], (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def policy_PARTIAL_NEXT(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                        p1: int, m1: int, p2: int, m2: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_policy(PLANTED["PARTIAL-NEXT"], (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def policy_WORK_CONSERVING(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                           p1: int, m1: int, p2: int, m2: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_policy(PLANTED["WORK-CONSERVING"], (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def complete_PREFILL_ONCE(token_budget: int, prompt_len: int, max_new: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= prompt_len <= LIMIT and 1 <= max_new <= MAX_NEW
    keeps_time(PLANTED["PREFILL-ONCE"], token_budget, prompt_len, max_new)


def complete_FIRST_TOKEN(token_budget: int, prompt_len: int, max_new: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= prompt_len <= LIMIT and 1 <= max_new <= MAX_NEW
    keeps_time(PLANTED["FIRST-TOKEN"], token_budget, prompt_len, max_new)


def complete_TOKENS(token_budget: int, prompt_len: int, max_new: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= prompt_len <= LIMIT and 1 <= max_new <= MAX_NEW
    keeps_time(PLANTED["TOKENS"], token_budget, prompt_len, max_new)


def complete_PROGRESS(token_budget: int, prompt_len: int, max_new: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= prompt_len <= LIMIT and 1 <= max_new <= MAX_NEW
    keeps_time(PLANTED["PROGRESS"], token_budget, prompt_len, max_new)


KINDS = (  # the contract of each kind, and the rules its planted copies break
    ("add", add_accepts_exactly_what_fits, ("NEVER-FIT",)),
    ("schedule", schedule_keeps_the_limits, ("BUDGET", "ONE-ENTRY", "SLOTS", "KV", "FCFS")),
    ("complete", complete_emits_on_time, ("PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "PROGRESS")),
    ("policy", schedule_follows_the_policy, ("DECODE-FIRST", "PARTIAL-NEXT", "WORK-CONSERVING")),
)
FUNCTIONS: dict[str, str] = {rule: f"{kind}_{rule.replace('-', '_')}" for kind, _, rules in KINDS for rule in rules}
TARGETS: dict[str, str] = {rule: f"{__name__}.{name}" for rule, name in FUNCTIONS.items()}  # crosshair check targets
REFERENCE: dict[str, Callable[..., None]] = {rule: contract for _, contract, rules in KINDS for rule in rules}


def replay(rule: str, args: tuple[int, ...]) -> tuple[str | None, str | None]:
    """Run a counterexample concretely: on the reference's contract and on the planted copy. Returns
    the assertion each broke (None where it held): a genuine one breaks only the planted copy, naming
    `rule`."""
    return replay_on((REFERENCE[rule], globals()[FUNCTIONS[rule]]), args)


def replay_on(contracts: tuple[Callable[..., None], Callable[..., None]],
              args: tuple[int, ...]) -> tuple[str | None, str | None]:
    """(the reference's contract, the planted copy's) run on `args`: the assertion each broke, or None."""
    outcomes: list[str | None] = []
    for contract in contracts:
        try:
            contract(*args)
            outcomes.append(None)
        except AssertionError as error:
            outcomes.append(str(error) or "an assertion")
    return outcomes[0], outcomes[1]
