"""A deliberately broken copy of the reference for the CrossHair check to find: the negative
control of `contracts`. The planted bug hides where random tests rarely look: for a request with
exactly PLANTED_PROMPT prompt tokens and PLANTED_MAX_NEW tokens to emit, admission reserves only the
prompt, forgetting max_new (rule KV), so the reservation it later returns is larger than the one it
took. CrossHair must solve for those two sizes to see it."""

from __future__ import annotations

from stallfree.reference import Scheduler

PLANTED_PROMPT = 37
PLANTED_MAX_NEW = 5


class PlantedKV(Scheduler):
    """The reference, except that one request size reserves too little KV at admission."""

    def schedule(self):  # type: ignore[no-untyped-def]
        before = {r.rid for r in self.running}
        plan = super().schedule()
        for request in self.running:
            if request.rid not in before and (request.prompt_len, request.max_new) == (PLANTED_PROMPT, PLANTED_MAX_NEW):
                self._free_kv += request.max_new  # the planted bug: max_new is not reserved
        return plan


def planted_schedule_keeps_kv(kv_tokens: int, prompt_len: int, max_new: int) -> None:
    """KV on the broken copy: free KV is the capacity less the running reservations."""
    assert 1 <= kv_tokens <= 64 and 1 <= prompt_len <= 64 and 1 <= max_new <= 8
    assert prompt_len + max_new <= kv_tokens
    scheduler = PlantedKV(8, 2, kv_tokens)
    scheduler.add(0, prompt_len, max_new)
    scheduler.schedule()
    reserved = sum(r.prompt_len + r.max_new for r in scheduler.running)
    assert scheduler.free_kv == kv_tokens - reserved, "KV: free KV is not the capacity less the reservations"
