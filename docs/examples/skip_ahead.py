"""A scheduler that skips a blocked request for a smaller one, written for the conformance docs.

Decodes first, then unfinished prompts, then admissions, like the contract's policy, except that
when the request at the head of the queue does not fit the free KV (or the budget left), it looks
further down the queue and admits any request that does. Memory and budget are used more fully; the
cost is that a large request can be passed over for as long as small ones keep coming: it breaks
FCFS, and only FCFS (docs/conformance.md shows the kit's report).

Speaks the plain protocol: SkipAhead(token_budget=, max_seqs=, kv_tokens=), add, schedule, complete.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Request:
    rid: int
    prompt_len: int
    max_new: int
    num_prefilled: int = 0
    num_emitted: int = 0

    @property
    def reservation(self) -> int:
        return self.prompt_len + self.max_new

    @property
    def ready(self) -> bool:
        return self.num_prefilled == self.prompt_len


class SkipAhead:
    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.token_budget = token_budget
        self.max_seqs = max_seqs
        self.kv_tokens = kv_tokens
        self.free_kv = kv_tokens
        self.waiting: list[Request] = []
        self.running: dict[int, Request] = {}
        self.rids: set[int] = set()

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        for name, value in (("rid", rid), ("prompt_len", prompt_len), ("max_new", max_new)):
            if type(value) is not int or value < (0 if name == "rid" else 1):
                raise ValueError(f"{name} must be an int >= {0 if name == 'rid' else 1}, got {value!r}")
        if rid in self.rids:
            raise ValueError(f"rid {rid} is taken")
        if prompt_len + max_new > self.kv_tokens:
            raise ValueError(f"prompt_len + max_new = {prompt_len + max_new} exceeds kv_tokens={self.kv_tokens}")
        self.rids.add(rid)
        self.waiting.append(Request(rid, prompt_len, max_new))

    def schedule(self) -> list[tuple[int, int]]:
        plan, left = [], self.token_budget
        for r in self.running.values():
            if left and r.ready:
                plan.append((r.rid, 1))
                left -= 1
        for r in self.running.values():
            if left and not r.ready:
                n = min(r.prompt_len - r.num_prefilled, left)
                plan.append((r.rid, n))
                left -= n
        for r in list(self.waiting):  # every waiting request that fits, not only the head
            if not left or len(self.running) >= self.max_seqs:
                break
            if r.reservation <= self.free_kv:
                self.waiting.remove(r)
                self.running[r.rid] = r
                self.free_kv -= r.reservation
                n = min(r.prompt_len, left)
                plan.append((r.rid, n))
                left -= n
        return plan

    def complete(self, plan: list[tuple[int, int]]) -> list[int]:
        emitted = []
        for rid, n in plan:
            r = self.running[rid]
            if not r.ready:
                r.num_prefilled += n
                if not r.ready:
                    continue
            r.num_emitted += 1
            emitted.append(rid)
            if r.num_emitted == r.max_new:
                del self.running[rid]
                self.free_kv += r.reservation
        return emitted
