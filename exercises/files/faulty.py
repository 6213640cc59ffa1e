"""A continuous-batching scheduler with a token budget and chunked prefill, and two faults.

Each step: one decode for every request whose prompt is done, then the next chunk of each prompt
still being prefilled, then new requests first come first served while a slot and their KV
(prompt_len + max_new) are free. Speaks the plain protocol: Scheduler(token_budget=, max_seqs=,
kv_tokens=), add(rid, prompt_len, max_new), schedule() -> [(rid, n)], complete(plan) -> [rid].
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
    def is_ready(self) -> bool:
        return self.num_prefilled == self.prompt_len


class Scheduler:
    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.token_budget = token_budget
        self.max_seqs = max_seqs
        self.kv_tokens = kv_tokens
        self.free_kv = kv_tokens
        self.waiting: deque[Request] = deque()
        self.running: dict[int, Request] = {}
        self.rids: set[int] = set()

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        for name, value, least in (("rid", rid, 0), ("prompt_len", prompt_len, 1), ("max_new", max_new, 1)):
            if type(value) is not int:
                raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
            if value < least:
                raise ValueError(f"{name} must be >= {least}, got {value}")
        if rid in self.rids:
            raise ValueError(f"rid {rid} is already taken")
        if prompt_len + max_new > self.kv_tokens:
            raise ValueError(f"prompt_len + max_new = {prompt_len + max_new} exceeds kv_tokens={self.kv_tokens}")
        self.rids.add(rid)
        self.waiting.append(Request(rid, prompt_len, max_new))

    def schedule(self) -> list[tuple[int, int]]:
        plan: list[tuple[int, int]] = []
        left = self.token_budget
        for r in self.running.values():  # decodes first
            if left and r.is_ready:
                plan.append((r.rid, 1))
                left -= 1
        for r in self.running.values():  # then the partial prompts, oldest first
            if left and not r.is_ready:
                n = min(r.prompt_len - r.num_prefilled, self.token_budget)
                plan.append((r.rid, n))
                left -= n
        while left > 0 and self.waiting and len(self.running) < self.max_seqs:  # then admissions, in order
            head = self.waiting[0]
            if head.reservation > self.free_kv:
                break  # the head does not fit: those behind it wait too
            self.waiting.popleft()
            self.running[head.rid] = head
            self.free_kv -= head.reservation
            n = min(head.prompt_len, left)
            plan.append((head.rid, n))
            left -= n
        return plan

    def complete(self, plan: list[tuple[int, int]]) -> list[int]:
        emitted: list[int] = []
        for rid, n in plan:
            r = self.running[rid]
            if r.is_ready:
                self.emit(r, emitted)
            else:
                r.num_prefilled += n
                if r.is_ready:  # the chunk that completes the prompt yields the first token
                    self.emit(r, emitted)
        return emitted

    def emit(self, r: Request, emitted: list[int]) -> None:
        r.num_emitted += 1
        emitted.append(r.rid)
        if r.num_emitted == r.max_new:
            self.release(r)

    def release(self, r: Request) -> None:
        del self.running[r.rid]
        self.free_kv += r.prompt_len
