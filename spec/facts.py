"""What one step did, read off the protocol: the facts every rule judges.

`observe` classifies each plan entry against the shadow state before the step (a decode for a ready
request, a chunk for a partial one, an admission for a waiting one) and records the emitted rids.
`apply` then moves the shadow to the state after the step. Rules only read; they never update.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import RuleViolation
from .shadow import Shadow, Track

PROTOCOL = "PROTOCOL"  # not a rule of the contract: the scheduler did not speak the plain protocol


@dataclass(slots=True)
class Chunk:
    """Prompt positions [start, start + n) of `track`, run this step."""

    track: Track
    n: int
    start: int

    @property
    def completes(self) -> bool:
        return self.start + self.n >= self.track.request.prompt_len


@dataclass(slots=True)
class StepFacts:
    """One step as the rules see it. Sums are taken once here, so that rules stay O(1) where they can."""

    step: int
    plan: list[tuple[int, int]]  # the entries, normalised, in plan order
    planned: set[int] = field(default_factory=set)  # rids in the plan
    num_tokens: int = 0
    decodes: list[tuple[Track, int]] = field(default_factory=list)  # entries for ready requests
    num_decode_tokens: int = 0
    chunks: list[Chunk] = field(default_factory=list)  # entries for partial requests
    admitted: list[Chunk] = field(default_factory=list)  # entries for waiting requests: admissions
    prefills: list[Chunk] = field(default_factory=list)  # chunks and admissions, in plan order
    admitted_reservation: int = 0  # KV reserved by this step's admissions
    duplicates: list[int] = field(default_factory=list)  # rids listed more than once
    first_bad_n: tuple[int, int] | None = None  # the first entry with n < 1
    # Known once complete() has returned:
    emitted: list[int] = field(default_factory=list)  # as complete() returned them, in order
    emitted_set: set[int] = field(default_factory=set)
    finished: list[Track] = field(default_factory=list)  # requests that emit their last token now
    finished_reservation: int = 0
    reported_free_kv: int | None = None  # the scheduler's own free KV after the step, if it shows one


def _as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _protocol(step: int, message: str, rule: str = PROTOCOL) -> RuleViolation:
    return RuleViolation(rule, step, message)


def normalise_plan(step: int, plan: object) -> list[tuple[int, int]]:
    """The plan as (rid, n) pairs of ints, or a PROTOCOL violation saying what is wrong with it."""
    try:
        items = list(plan)  # type: ignore[call-overload]
    except TypeError:
        raise _protocol(step, f"schedule() returned {type(plan).__name__} {plan!r:.80}, not a sequence") from None
    pairs: list[tuple[int, int]] = []
    for i, entry in enumerate(items):
        try:
            rid, n = entry
        except (TypeError, ValueError):
            raise _protocol(step, f"plan entry {i} is {entry!r:.80}, which does not unpack as (rid, n)") from None
        if (type(rid) is not int and _as_int(rid) is None) or (type(n) is not int and _as_int(n) is None):
            raise _protocol(step, f"plan entry {i} is ({rid!r:.40}, {n!r:.40}): rid and n must be ints")
        pairs.append((rid, n))
    return pairs


def normalise_emitted(step: int, emitted: object) -> list[int]:
    try:
        rids: list[int] = list(emitted)  # type: ignore[call-overload]
    except TypeError:
        kind = type(emitted).__name__
        raise _protocol(step, f"complete() returned {kind} {emitted!r:.80}, not an iterable of rids") from None
    for rid in rids:
        if _as_int(rid) is None:
            raise _protocol(step, f"complete() returned {rid!r:.40} among the emitted rids: rids are ints")
    return rids


def observe(shadow: Shadow, plan: list[tuple[int, int]]) -> StepFacts:
    """Classify the plan's entries against `shadow` (the state before the step)."""
    step = shadow.step
    facts = StepFacts(step, plan)
    seen = facts.planned
    running, tracks = shadow.running, shadow.tracks
    num_tokens = 0
    for rid, n in plan:
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
            if rid in shadow.rejected:
                raise _protocol(step, f"rid {rid} was refused by add() yet is planned", rule="NEVER-FIT")
            raise _protocol(step, f"plan names rid {rid}, which was never added")
        if track.finished_at is not None:
            raise _protocol(
                step, f"plan names rid {rid}, which finished at step {track.finished_at} after "
                f"emitting all max_new={track.request.max_new} tokens", rule="TOKENS",
            )
        chunk = Chunk(track, n, 0)
        facts.admitted.append(chunk)
        facts.prefills.append(chunk)
        facts.admitted_reservation += track.request.reservation
    facts.num_tokens = num_tokens
    return facts


def observe_emitted(shadow: Shadow, facts: StepFacts, emitted: list[int], free_kv: int | None) -> None:
    """Add what complete() reported to `facts`: the emitted rids and the scheduler's free KV."""
    facts.emitted = emitted
    emitted_set = facts.emitted_set = set(emitted)
    facts.reported_free_kv = free_kv
    tracks, planned = shadow.tracks, facts.planned
    for rid in emitted_set:
        track = tracks.get(rid)
        if track is None:
            raise _protocol(facts.step, f"complete() says rid {rid} emitted a token, but it was never added")
        if rid in planned and track.num_emitted + 1 == track.request.max_new:
            facts.finished.append(track)
            facts.finished_reservation += track.request.reservation


def apply(shadow: Shadow, facts: StepFacts) -> None:
    """Action: the step ran. Move the shadow to the state after it.

    The shadow follows what the scheduler did, even where a rule was broken (and not checked), so
    that a partial profile can still judge the rules it does check.
    """
    step = facts.step
    for chunk in facts.admitted:
        track = chunk.track
        if shadow.waiting and shadow.waiting[0] is track:
            shadow.waiting.popleft()
        else:
            shadow.waiting.remove(track)
        track.admitted_at = step
        shadow.running[track.rid] = track
        shadow.free_kv -= track.request.reservation
    for chunk in facts.prefills:
        track = chunk.track
        track.num_prefilled = min(track.request.prompt_len, track.num_prefilled + chunk.n)
        if track.is_ready:
            shadow.num_ready += 1
    running = shadow.running
    for rid in facts.emitted_set:
        live = running.get(rid)
        if live is not None:  # a token from a request not running is reported by TOKENS; not followed
            live.num_emitted += 1
    for track in facts.finished:
        track.finished_at = step
        del running[track.rid]
        shadow.free_kv += track.request.reservation
        if track.is_ready:
            shadow.num_ready -= 1
    shadow.step = step + 1


def rids(tracks: Iterable[Track]) -> list[int]:
    return [t.rid for t in tracks]
