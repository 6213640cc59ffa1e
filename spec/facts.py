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
    step: int
    plan: list[tuple[int, int]]  # the entries, normalised, in plan order
    emitted: list[int]  # as complete() returned them, in order
    emitted_set: set[int]
    num_tokens: int = 0
    decodes: list[tuple[Track, int]] = field(default_factory=list)  # entries for ready requests
    chunks: list[Chunk] = field(default_factory=list)  # entries for partial requests
    admitted: list[Chunk] = field(default_factory=list)  # entries for waiting requests: admissions
    duplicates: list[int] = field(default_factory=list)  # rids listed more than once
    finished: list[Track] = field(default_factory=list)  # requests that emit their last token now
    reported_free_kv: int | None = None  # the scheduler's own free KV after the step, if it shows one

    @property
    def admitted_reservation(self) -> int:
        return sum(c.track.request.reservation for c in self.admitted)

    @property
    def finished_reservation(self) -> int:
        return sum(t.request.reservation for t in self.finished)


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
        if _as_int(rid) is None or _as_int(n) is None:
            raise _protocol(step, f"plan entry {i} is ({rid!r:.40}, {n!r:.40}): rid and n must be ints")
        pairs.append((rid, n))
    return pairs


def normalise_emitted(step: int, emitted: object) -> list[int]:
    try:
        rids = list(emitted)  # type: ignore[call-overload]
    except TypeError:
        raise _protocol(step, f"complete() returned {type(emitted).__name__} {emitted!r:.80}, not an iterable of rids") from None
    for rid in rids:
        if _as_int(rid) is None:
            raise _protocol(step, f"complete() returned {rid!r:.40} among the emitted rids: rids are ints")
    return rids


def observe(shadow: Shadow, plan: list[tuple[int, int]]) -> StepFacts:
    """Classify the plan's entries against `shadow` (the state before the step)."""
    step = shadow.step
    facts = StepFacts(step, plan, [], set())
    seen: set[int] = set()
    running, tracks = shadow.running, shadow.tracks
    num_tokens = 0
    for rid, n in plan:
        num_tokens += n
        if rid in seen:
            facts.duplicates.append(rid)
            continue
        seen.add(rid)
        track = running.get(rid)
        if track is not None:
            if track.is_ready:
                facts.decodes.append((track, n))
            else:
                facts.chunks.append(Chunk(track, n, track.num_prefilled))
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
        facts.admitted.append(Chunk(track, n, 0))
    facts.num_tokens = num_tokens
    return facts


def observe_emitted(shadow: Shadow, facts: StepFacts, emitted: list[int], free_kv: int | None) -> None:
    """Add what complete() reported to `facts`: the emitted rids and the scheduler's free KV."""
    facts.emitted = emitted
    facts.emitted_set = set(emitted)
    facts.reported_free_kv = free_kv
    planned = {rid for rid, _ in facts.plan}
    for rid in facts.emitted_set:
        track = shadow.tracks.get(rid)
        if track is None:
            raise _protocol(facts.step, f"complete() says rid {rid} emitted a token, but it was never added")
        if rid in planned and track.num_emitted + 1 == track.request.max_new:
            facts.finished.append(track)


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
    for chunk in facts.chunks + facts.admitted:
        track = chunk.track
        track.num_prefilled = min(track.request.prompt_len, track.num_prefilled + chunk.n)
        if track.is_ready:
            shadow.num_ready += 1
    running = shadow.running
    for rid in facts.emitted_set:
        track = running.get(rid)
        if track is None:
            continue  # a token from a request not running: reported by TOKENS, nothing to follow
        track.num_emitted += 1
    for track in facts.finished:
        track.finished_at = step
        del running[track.rid]
        shadow.free_kv += track.request.reservation
        if track.is_ready:
            shadow.num_ready -= 1
    shadow.step = step + 1


def rids(tracks: Iterable[Track]) -> list[int]:
    return [t.rid for t in tracks]
