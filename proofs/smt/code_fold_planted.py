"""Copies of the reference with a bug planted in a phase loop of schedule(), the negative controls of
FOLD (code, induction, any N) (`code_fold_induction`). Each is the reference's own schedule() source
with a few lines replaced (`planted`), compiled under a file name of its own, whose source the frame
reads as it reads the reference's: so each control follows the reference as it changes, and a change
that removes a line it replaces fails loudly here.

- `LookAheadAdmission`: admission waits while a shorter prompt is second in line (reads the second of
  `self._waiting`'s values);
- `NewestFirstAdmission`: admission takes the newest in line first (the last of its values, `popitem()`);
- `SkipAheadAdmission`: admission passes over one that does not fit and goes on (it keeps those it
  passed, and puts them back at the head after the loop);
- `PartialReadsTheLine`: a partial prompt's chunk is capped by the prompt of the head of the line;
- `PullReadyAtFour`, `PullReadyAtNine`: the partial loop's tail count is one more when a partial
  runs beside four (nine) or more running requests, so the newest ready one gets a second entry: no
  fold from N = 4 (9), though right on every state of three requests, so FOLD (code) at N = 3 holds;
- `PartialPeeksTheLine`, `PartialReadsHead`, `PartialPeeksAtTwelve`: under `seq.first_token_step is
  None` (the branch a partial takes, not a ready one), a partial's chunk is cut to one token, or capped
  by the head of the line's prompt, while three (twelve) or more wait: a look-ahead at the line from the
  partial loop, invisible at N = 3 (and, at twelve, at every N the rows try).

The first, second and fourth change what the first requests are planned, so FOLD (code) refutes them
at N = 2; the skip-ahead is still a fold (it breaks FCFS, not FOLD), so the row reads unknown of it.
"""

from __future__ import annotations

import inspect
import linecache
import textwrap

from stallfree.reference import Scheduler
from stallfree.reference import scheduler as reference_module


def planted(name: str, doc: str, edits: tuple[tuple[str, str], ...], scope: dict[str, object] | None = None,
            methods: dict[str, object] | None = None) -> type[Scheduler]:
    """A subclass of the reference whose schedule() is the reference's source with `edits` made (compiled
    in the reference's module's globals, and `scope`; the class given `methods` too)."""
    source = textwrap.dedent(inspect.getsource(Scheduler.schedule))
    for old, new in edits:
        if source.count(old) != 1:
            raise ValueError(f"{name}: {old.strip()!r} is not once in the reference's schedule()")
        source = source.replace(old, new)
    filename = f"<planted {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict[str, object] = {}
    exec(compile(source, filename, "exec"), {**vars(reference_module), **(scope or {})}, namespace)
    return type(name, (Scheduler,), {"schedule": namespace["schedule"], "__doc__": doc, "__module__": __name__,
                                     **(methods or {})})


HEAD = "        seq = next(iter(self._waiting.values()))\n"
TAKE = ("        if seq.request.reservation > self._free_kv:\n            break\n"
        "        rid, seq = self._waiting.popitem(last=False)\n")

LookAheadAdmission = planted("LookAheadAdmission", "Admission waits while a shorter prompt is second in line.", (
    (HEAD, HEAD + "        if len(self._waiting) > 1 and list(self._waiting.values())[1].request.prompt_len < "
                  "seq.request.prompt_len:\n            break\n"),))

NewestFirstAdmission = planted("NewestFirstAdmission", "Admission takes the newest in line first.", (
    (HEAD, "        seq = next(reversed(self._waiting.values()))\n"),
    ("        rid, seq = self._waiting.popitem(last=False)\n", "        rid, seq = self._waiting.popitem()\n")))

SkipAheadAdmission = planted("SkipAheadAdmission", "Admission passes over one that does not fit, and goes on.", (
    ("    while left and self._waiting", "    passed = OrderedDict()\n    while left and self._waiting"),
    (HEAD + TAKE, "        rid, seq = self._waiting.popitem(last=False)\n"
                  "        if seq.request.reservation > self._free_kv:\n"
                  "            passed[rid] = seq\n            continue\n"),
    ("    plan = ", "    passed.update(self._waiting)\n    self._waiting = passed\n    plan = ")))

PartialReadsTheLine = planted("PartialReadsTheLine", "A partial chunk is capped by the head of the line's prompt.", (
    ("            n = min(seq.num_remaining_prompt, left)\n",
     "            n = min(seq.num_remaining_prompt, left,\n"
     "                    next(iter(self._waiting.values())).request.prompt_len if self._waiting else left)\n"),))

GUARD = "    if len(self._running) > num_ready:\n"
TAIL = "reversed([*islice(reversed(self._running.values()), len(self._running) - num_ready)])"

NewestFirstPartials = planted("NewestFirstPartials", "The partial prompts, newest first.", (
    (TAIL, "islice(reversed(self._running.values()), len(self._running) - num_ready)"),))

TailPastThePartials = planted("TailPastThePartials", "The tail takes the newest ready request too.", (
    (GUARD, "    if len(self._running) > num_ready - 1:\n"),
    (TAIL, "reversed([*islice(reversed(self._running.values()), len(self._running) - (num_ready - 1))])")))

SkipsTheOldestPartial = planted("SkipsTheOldestPartial", "The tail leaves out the oldest partial prompt.", (
    (GUARD, "    if len(self._running) > num_ready + 1:\n"),
    (TAIL, "reversed([*islice(reversed(self._running.values()), len(self._running) - (num_ready + 1))])")))

GuardPastOnePartial = planted("GuardPastOnePartial", "The partial prompts are planned only while two are partial.", (
    (GUARD, "    if len(self._running) > num_ready + 1:\n"),))

ReadyCountRebound = planted("ReadyCountRebound", "The ready count, taken down by one before the tail.", (
    ("    left -= num_ready\n", "    left -= num_ready\n    num_ready -= 1\n"),))

TAIL_COUNT = "len(self._running) - num_ready"  # the partial loop's: the running after the ready ones


def _tail_count(name: str, doc: str, count: str) -> type[Scheduler]:
    return planted(name, doc, ((TAIL_COUNT, count),))


PullReadyAtFour = _tail_count("PullReadyAtFour", "The partial loop takes the newest ready one too, four running.",
                              f"({TAIL_COUNT}) * (1 + len(self._running) // 4)")
PullReadyAtNine = _tail_count("PullReadyAtNine", "The partial loop takes the newest ready one too, nine running.",
                              f"({TAIL_COUNT}) * (1 + len(self._running) // 9)")

CHUNK = "            n = min(seq.num_remaining_prompt, left)\n"  # the partial loop's chunk
PARTIAL = "            if seq.first_token_step is None and len(self._waiting) >= {}:\n"  # a partial's branch


def _partial_branch(name: str, doc: str, waiting: int, then: str) -> type[Scheduler]:
    return planted(name, doc, ((CHUNK, CHUNK + PARTIAL.format(waiting) + then),))


PartialPeeksTheLine = _partial_branch("PartialPeeksTheLine", "A partial's chunk is one token while three wait.", 3,
                                      "                n = 1\n")
PartialReadsHead = _partial_branch("PartialReadsHead", "A partial's chunk is capped by the head's prompt, three "
                                   "waiting.", 3, "                n = min(n, next(iter(self._waiting.values()))"
                                   ".request.prompt_len)\n")
PartialPeeksAtTwelve = _partial_branch("PartialPeeksAtTwelve", "A partial's chunk is one token while twelve wait.",
                                       12, "                n = 1\n")

CONTROLS = (LookAheadAdmission, NewestFirstAdmission, SkipAheadAdmission, PartialReadsTheLine, PullReadyAtFour,
            PullReadyAtNine, PartialPeeksTheLine, PartialReadsHead, PartialPeeksAtTwelve)
TAIL_CONTROLS = (NewestFirstPartials, TailPastThePartials, SkipsTheOldestPartial, GuardPastOnePartial,
                 ReadyCountRebound)
"""The partial prompts' guarded tail used wrongly: the frame refuses each (a shape it does not read, a
count or a guard that is not the tail past the ready ones), and FOLD (code) decides the row."""
