"""A prefill-first engine, written for the conformance docs: prompts run in steps of their own and
running streams wait for them.

Each step is either a prefill step or a decode step, never both. While any prompt is unfinished or a
new request can start, the step runs prompt chunks only (up to the budget); decodes run only in steps
with no prompt work. This keeps each step's shape uniform, at the cost of every running stream's
next token waiting behind each arriving prompt: it breaks DECODE-FIRST, and WORK-CONSERVING when a
prefill step leaves budget unused while a ready stream gets no decode (docs/conformance.md shows the
report).

Speaks the plain protocol: PrefillFirst(token_budget=, max_seqs=, kv_tokens=), add, schedule, complete.
"""

from __future__ import annotations

from collections import deque
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
    def in_prefill(self) -> bool:
        return self.num_prefilled < self.prompt_len


class PrefillFirst:
    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.token_budget = token_budget
        self.max_seqs = max_seqs
        self.kv_tokens = kv_tokens
        self.free_kv = kv_tokens
        self.waiting: deque[Request] = deque()
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
        plan = self.prefill_step()
        if plan:
            return plan
        return [(r.rid, 1) for r in self.running.values()][: self.token_budget]

    def prefill_step(self) -> list[tuple[int, int]]:
        """Prompt chunks only: unfinished prompts first, then new admissions, first come first served."""
        plan, left = [], self.token_budget
        for r in self.running.values():
            if left and r.in_prefill:
                n = min(r.prompt_len - r.num_prefilled, left)
                plan.append((r.rid, n))
                left -= n
        while left and self.waiting and len(self.running) < self.max_seqs:
            head = self.waiting[0]
            if head.reservation > self.free_kv:
                break
            self.waiting.popleft()
            self.running[head.rid] = head
            self.free_kv -= head.reservation
            n = min(head.prompt_len, left)
            plan.append((head.rid, n))
            left -= n
        return plan

    def complete(self, plan: list[tuple[int, int]]) -> list[int]:
        emitted = []
        for rid, n in plan:
            r = self.running[rid]
            if r.in_prefill:
                r.num_prefilled += n
                if r.in_prefill:
                    continue  # the prompt is not done: no token yet
            r.num_emitted += 1
            emitted.append(rid)
            if r.num_emitted == r.max_new:
                del self.running[rid]
                self.free_kv += r.reservation
        return emitted
