"""What one step did, read off the protocol: the facts every rule judges.

`observe` classifies each plan entry against the shadow state before the step (a decode for a ready
request, a chunk for a partial one, an admission for a waiting one) and records the emitted rids.
`apply` then moves the shadow to the state after the step. Rules only read; they never update.
"""

from __future__ import annotations

from ..chunk import Chunk
from ..ending import Ending, Reason
from ..lines import start_running
from ..returned import MAX_ENTRIES, emitted_rids, plan_entries, protocol
from ..types import Plan
from .shadow import Shadow, Track

NO_STOPS: frozenset[int] = frozenset()  # a step's stops, when there are none (shared: never mutated)


class StepFacts:
    """One step as the rules see it. Sums are taken once here, so that rules stay O(1) where they can.

    A plain record with a hand-written constructor: the monitor builds one every step, and this is
    several times cheaper than a generated one with default factories."""

    __slots__ = (
        "admitted",
        "admitted_reservation",
        "cancelled",
        "cancelled_reservation",
        "chunks",
        "decodes",
        "duplicates",
        "emitted",
        "emitted_set",
        "ended_emitted",
        "ended_planned",
        "finished",
        "finished_reservation",
        "first_bad_n",
        "num_decode_tokens",
        "num_tokens",
        "plan",
        "planned",
        "prefills",
        "reported_free_kv",
        "step",
        "stopped",
    )

    def __init__(self, step: int) -> None:
        self.step = step
        self.plan: list[tuple[int, int]] = []  # the entries, normalised, in plan order
        self.planned: set[int] = set()  # rids in the plan
        self.num_tokens = 0
        self.decodes: list[tuple[Track, int]] = []  # entries for ready requests
        self.num_decode_tokens = 0
        self.chunks: list[Chunk[Track]] = []  # entries for partial requests
        self.admitted: list[Chunk[Track]] = []  # entries for waiting requests: admissions
        self.prefills: list[Chunk[Track]] = []  # chunks and admissions, in plan order
        self.admitted_reservation = 0  # KV reserved by this step's admissions
        self.duplicates: list[int] = []  # rids listed more than once
        self.first_bad_n: tuple[int, int] | None = None  # the first entry with n < 1
        self.ended_planned: list[tuple[int, Ending]] = []  # entries naming requests that already ended
        # Known before complete() runs (the caller's stops; cancels while the plan is pending):
        self.stopped: frozenset[int] = NO_STOPS  # rids whose token this step ends them (a stop)
        self.cancelled: dict[int, Track] = {}  # cancelled while this plan was pending: they end with it
        # Known once complete() has returned:
        self.emitted: list[int] = []  # as complete() returned them, in order
        self.emitted_set: set[int] = set()
        self.ended_emitted: list[tuple[int, Ending]] = []  # emitted rids of requests that already ended
        self.finished: list[Track] = []  # requests that end on this step: last token, stop or cancel
        self.finished_reservation = 0
        self.cancelled_reservation = 0  # the part of it returned by cancels: due by the next schedule()
        self.reported_free_kv: int | None = None  # the scheduler's own free KV after the step, if shown


def reason(facts: StepFacts, track: Track) -> Reason:
    """How `track`, one of `facts.finished`, ended on this step (read once the step is applied)."""
    if track.rid in facts.stopped:
        return Reason.STOP
    if track.num_emitted >= track.request.max_new:
        return Reason.LENGTH
    return Reason.CANCEL


def stops(facts: StepFacts) -> list[int]:
    """The step's stopped rids, in plan order (the order a trace lists them in)."""
    return [rid for rid, _ in facts.plan if rid in facts.stopped] if facts.stopped else []


def due(facts: StepFacts) -> list[Track]:
    """The requests the contract says emit a token on this step: every decode, then every chunk that
    completes its prompt, each in plan order. Only these may be stopped by it (rule TOKENS)."""
    tracks = [track for track, _ in facts.decodes]
    tracks.extend(c.track for c in facts.prefills if c.completes)
    return tracks


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def exact(value: int) -> int:
    """An int subclass's value as a plain int, read by int's own slot: the subclass's arithmetic, equality
    and hash (which could make a 100-token chunk add up to 4, or two rids one) are never used."""
    return int.__int__(value)


def observe(shadow: Shadow, plan: object) -> StepFacts:
    """Read the plan schedule() returned and classify each entry against `shadow` (the state
    before the step). Raises a PROTOCOL violation if the plan is not a sequence of (rid, n) ints
    naming known requests."""
    step = shadow.step
    items = plan.entries if type(plan) is Plan else plan  # the reference's plan: its entries, a tuple
    if (type(items) is not tuple and type(items) is not list) or len(items) > MAX_ENTRIES:
        items = plan_entries(step, plan)
    facts = StepFacts(step)
    pairs, seen = facts.plan, facts.planned
    running, tracks = shadow.running, shadow.tracks
    num_tokens = 0
    for i, entry in enumerate(items):
        try:
            rid, n = entry
        except (TypeError, ValueError):
            raise protocol(step, f"plan entry {i} is {entry!r:.80}, which does not unpack as (rid, n)") from None
        if not (type(rid) is int and type(n) is int):
            if not (_is_int(rid) and _is_int(n)):
                raise protocol(step, f"plan entry {i} is ({rid!r:.40}, {n!r:.40}): rid and n must be ints")
            rid, n = exact(rid), exact(n)
        pairs.append((rid, n))
        num_tokens += n
        if n < 1 and facts.first_bad_n is None:
            facts.first_bad_n = (rid, n)
        if rid in seen:
            facts.duplicates.append(rid)
            continue
        seen.add(rid)
        track = running.get(rid)
        if track is not None:
            if track.is_ready:
                facts.decodes.append((track, n))
                facts.num_decode_tokens += n
            else:
                chunk = Chunk(track, n, track.num_prefilled)
                facts.chunks.append(chunk)
                facts.prefills.append(chunk)
            continue
        track = tracks.get(rid)
        if track is None:
            ending = shadow.ended.get(rid)
            if ending is not None:  # judged by TOKENS (finished, stopped) or CANCEL (cancelled)
                facts.ended_planned.append((rid, ending))
                continue
            if rid in shadow.rejected:
                raise protocol(step, f"rid {rid} was refused by add() yet is planned", rule="NEVER-FIT")
            raise protocol(step, f"plan names rid {rid}, which was never added")
        chunk = Chunk(track, n, 0)
        facts.admitted.append(chunk)
        facts.prefills.append(chunk)
        facts.admitted_reservation += track.request.reservation
    facts.num_tokens = num_tokens
    return facts


def observe_emitted(shadow: Shadow, facts: StepFacts, emitted: object, free_kv: object) -> None:
    """Add what complete() reported to `facts`: the emitted rids, and the scheduler's free KV if it
    shows one. Raises a PROTOCOL violation if `emitted` is not an iterable of known rids."""
    if type(emitted) is tuple and len(emitted) <= MAX_ENTRIES:  # the reference's: a tuple
        rids = list(emitted)
    elif type(emitted) is list and len(emitted) <= MAX_ENTRIES:  # a trace's: read as `returned` reads a list
        rids = emitted
    else:
        rids = emitted_rids(facts.step, emitted)
    facts.emitted = rids
    emitted_set = facts.emitted_set = set()
    facts.reported_free_kv = free_kv if type(free_kv) is int else None
    tracks, planned = shadow.tracks, facts.planned
    for rid in rids:
        if type(rid) is not int:
            if not _is_int(rid):
                raise protocol(facts.step, f"complete() returned {rid!r:.40} among the emitted rids: rids are ints")
            if facts.emitted is rids:  # the first int subclass: every rid judged as its exact int from here
                facts.emitted = [exact(r) if _is_int(r) else r for r in rids]
            rid = exact(rid)
        if rid in emitted_set:
            continue
        emitted_set.add(rid)
        track = tracks.get(rid)
        if track is None:
            ending = shadow.ended.get(rid)
            if ending is not None:  # judged by TOKENS (finished, stopped) or CANCEL (cancelled)
                facts.ended_emitted.append((rid, ending))
                continue
            raise protocol(facts.step, f"complete() says rid {rid} emitted a token, but it was never added")
        if rid in planned and (track.num_emitted + 1 == track.request.max_new or rid in facts.stopped):
            facts.finished.append(track)
            facts.finished_reservation += track.request.reservation
    if facts.stopped or facts.cancelled:  # the rare steps where a request ends early
        _end_early(facts)


def _end_early(facts: StepFacts) -> None:
    """Add to `facts.finished` the stopped requests that did not emit (TOKENS then judges that) and
    the requests cancelled while the plan was pending."""
    ending = {t.rid for t in facts.finished}
    for track in due(facts):
        if track.rid in facts.stopped and track.rid not in ending:
            ending.add(track.rid)
            facts.finished.append(track)
            facts.finished_reservation += track.request.reservation
    for rid, track in facts.cancelled.items():
        if rid not in ending:
            ending.add(rid)
            facts.finished.append(track)
            facts.finished_reservation += track.request.reservation
            facts.cancelled_reservation += track.request.reservation


def apply(shadow: Shadow, facts: StepFacts) -> None:
    """Action: the step ran. Move the shadow to the state after it.

    The shadow follows what the scheduler did, even where a rule was broken (and not checked), so
    that a partial profile can still judge the rules it does check.
    """
    step = facts.step
    for chunk in facts.admitted:
        track = chunk.track
        start_running(shadow, track, step)
        shadow.free_kv -= track.request.reservation
    for chunk in facts.prefills:
        track = chunk.track
        track.num_prefilled = min(track.request.prompt_len, track.num_prefilled + chunk.n)
        if track.num_prefilled == track.request.prompt_len:
            track.is_ready = True
            shadow.num_ready += 1
            del shadow.prefilling[track.rid]
    running = shadow.running
    for rid in facts.emitted_set:
        live = running.get(rid)
        if live is not None:  # a token from a request not running is reported by TOKENS; not followed
            live.num_emitted += 1
    for track in facts.finished:
        shadow.end(track, reason(facts, track))
    shadow.kv_owed += facts.cancelled_reservation  # cancels that took effect with the step: due by the next plan
    shadow.step = step + 1
