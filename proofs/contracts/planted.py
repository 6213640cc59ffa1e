"""Deliberately broken copies of the reference for the CrossHair contracts to find: their negative
controls, one per rule a contract states. Each bug hides where random tests rarely look, behind one
exact request size (PLANTED_PROMPT prompt tokens, or PLANTED_MAX_NEW to emit, or a total one over
K), so CrossHair must solve for that size to see it. `planted_contracts` runs the contracts on them."""

from __future__ import annotations

from stallfree.reference import Scheduler
from stallfree.reference.sequence import Sequence
from stallfree.spec import Entry, Plan, Request

PLANTED_PROMPT = 37
PLANTED_MAX_NEW = 5


class _Planted(Scheduler):
    breaks = ""  # the rule the planted bug breaks

    def replan(self, entries: list[Entry]) -> Plan:
        """Make `entries` the pending plan, so that complete() takes the altered one."""
        assert self._step.plan is not None
        self._step.plan = Plan(self._step.number, tuple(entries))
        return self._step.plan

    def sequence(self, rid: int) -> Sequence:
        """The sequence of a waiting or running request."""
        seq = self._running.get(rid)
        return self._waiting[rid] if seq is None else seq

    def is_partial(self, rid: int) -> bool:
        return rid in self._running and rid not in self._ready

    def is_planted(self, rid: int) -> bool:
        return self.sequence(rid).request.prompt_len == PLANTED_PROMPT


class PlantedNeverFit(_Planted):
    """add() is off by one: it accepts a request whose reservation is exactly K + 1."""

    breaks = "NEVER-FIT"

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        taken = rid in self._waiting or rid in self._running
        if prompt_len + max_new == self.config.kv_tokens + 1 and not taken:
            self._waiting[rid] = Sequence(Request(rid, prompt_len, max_new))
            return
        super().add(rid, prompt_len, max_new)


class PlantedBudget(_Planted):
    """The first chunk of a PLANTED_PROMPT prompt, cut by the budget, runs one token more."""

    breaks = "BUDGET"

    def schedule(self) -> Plan:
        plan = super().schedule()
        entries = [Entry(rid, n + 1) if self.is_planted(rid) and self.sequence(rid).num_prefilled == 0
                   and n < PLANTED_PROMPT else Entry(rid, n) for rid, n in plan]
        return self.replan(entries)


class PlantedOneEntry(_Planted):
    """A chunk of a PLANTED_PROMPT prompt goes out as two entries for the same request."""

    breaks = "ONE-ENTRY"

    def schedule(self) -> Plan:
        entries: list[Entry] = []
        for rid, n in super().schedule():
            split = n >= 2 and self.is_partial(rid) and self.is_planted(rid)
            entries += [Entry(rid, n - 1), Entry(rid, 1)] if split else [Entry(rid, n)]
        return self.replan(entries)


class PlantedSlots(_Planted):
    """While a PLANTED_PROMPT request waits, admission allows one slot more than S."""

    breaks = "SLOTS"

    def schedule(self) -> Plan:
        config = self.config
        if any(r.prompt_len == PLANTED_PROMPT for r in self.waiting):
            self.config = type(config)(config.token_budget, config.max_seqs + 1, config.kv_tokens)
        try:
            return super().schedule()
        finally:
            self.config = config


class PlantedKV(_Planted):
    """Admitting a request of exactly PLANTED_PROMPT and PLANTED_MAX_NEW reserves only its prompt."""

    breaks = "KV"

    def schedule(self) -> Plan:
        before = {r.rid for r in self.running}
        plan = super().schedule()
        for request in self.running:
            if request.rid not in before and (request.prompt_len, request.max_new) == (PLANTED_PROMPT, PLANTED_MAX_NEW):
                self._free_kv += request.max_new  # the planted bug: max_new is not reserved
        return plan


class PlantedFCFS(_Planted):
    """A PLANTED_PROMPT request second in the queue jumps ahead of the head."""

    breaks = "FCFS"

    def schedule(self) -> Plan:
        line = list(self._waiting)
        if len(line) >= 2 and self.is_planted(line[1]):
            self._waiting.move_to_end(line[1], last=False)
        return super().schedule()


class PlantedPrefillOnce(_Planted):
    """A chunk after the first of a PLANTED_PROMPT prompt starts one position early."""

    breaks = "PREFILL-ONCE"

    def schedule(self) -> Plan:
        plan = super().schedule()
        return self.replan([Entry(rid, n + 1) if self.is_partial(rid) and self.is_planted(rid)
                            and self.sequence(rid).num_prefilled > 0 else Entry(rid, n) for rid, n in plan])


class PlantedFirstToken(_Planted):
    """The chunk that completes a PLANTED_PROMPT prompt does not report its first token; it comes one
    step late, with the first decode."""

    breaks = "FIRST-TOKEN"

    def complete(self, plan: Plan) -> tuple[int, ...]:
        # read before it may end
        planted = {rid for rid in self._running if self.is_partial(rid) and self.is_planted(rid)}
        emitted = super().complete(plan)
        return tuple(rid for rid in emitted if rid not in planted)


class PlantedTokens(_Planted):
    """A request with exactly PLANTED_MAX_NEW tokens to emit finishes one step late: one token too many."""

    breaks = "TOKENS"

    def complete(self, plan: Plan) -> tuple[int, ...]:
        step = self._step.number
        emitted = super().complete(plan)
        for rid in emitted:
            seq = self._running.get(rid)
            if seq is None:  # ended on this step: not the planted one
                continue
            end = step + seq.request.max_new - 1
            if seq.first_token_step == step and seq.request.max_new == PLANTED_MAX_NEW:
                self._finishing[end].remove(seq)
                self._finishing.setdefault(end + 1, []).append(seq)
        return emitted


class PlantedProgress(_Planted):
    """A PLANTED_PROMPT request waits one idle step once its prompt is done."""

    breaks = "PROGRESS"

    def schedule(self) -> Plan:
        stalls = any(self.is_planted(rid) and self._running[rid].first_token_step == self._step.number - 1
                     for rid in self._ready)
        plan = super().schedule()
        return self.replan([]) if stalls else plan


class PlantedDecodeFirst(_Planted):
    """While a PLANTED_PROMPT prompt is partial, the youngest ready request's decode goes to its chunk."""

    breaks = "DECODE-FIRST"

    def schedule(self) -> Plan:
        plan = super().schedule()
        entries = list(plan)
        decodes = [i for i, (rid, _) in enumerate(entries) if rid in self._ready]
        chunks = [i for i, (rid, _) in enumerate(entries) if self.is_partial(rid) and self.is_planted(rid)]
        if decodes and chunks:
            rid, n = entries[chunks[0]]
            if n < self._running[rid].num_remaining_prompt:
                entries[chunks[0]] = Entry(rid, n + 1)
                entries.pop(decodes[-1])
        return self.replan(entries)


class PlantedPartialNext(_Planted):
    """A PLANTED_PROMPT prompt's chunk after its first is one token short (off by one)."""

    breaks = "PARTIAL-NEXT"

    def schedule(self) -> Plan:
        plan = super().schedule()
        return self.replan([Entry(rid, n - 1) if self.is_partial(rid) and self.is_planted(rid) and n > 1
                            and self._running[rid].num_prefilled > 0 else Entry(rid, n) for rid, n in plan])


class PlantedWorkConserving(_Planted):
    """While a PLANTED_PROMPT request waits second in the queue, admission stops after the head."""

    breaks = "WORK-CONSERVING"

    def schedule(self) -> Plan:
        line = list(self._waiting.items())
        if len(line) >= 2 and self.is_planted(line[1][0]):
            for rid, _ in line[1:]:
                del self._waiting[rid]
            try:
                return super().schedule()
            finally:
                self._waiting.update(line[1:])
        return super().schedule()


PLANTED: dict[str, type[_Planted]] = {
    cls.breaks: cls
    for cls in (PlantedNeverFit, PlantedBudget, PlantedOneEntry, PlantedSlots, PlantedKV, PlantedFCFS,
                PlantedPrefillOnce, PlantedFirstToken, PlantedTokens, PlantedProgress, PlantedDecodeFirst,
                PlantedPartialNext, PlantedWorkConserving)
}
