"""The safety rules' quantities, step by step, for people checking a trace by hand: tokens against
B (BUDGET), requests running against S (SLOTS), KV reserved against K (KV), the prompt positions each
chunk runs (PREFILL-ONCE), which prompts complete and emit their first token (FIRST-TOKEN), and the
tokens each request has emitted against its max_new (TOKENS).

These are read off the recorded steps; they show what the rules bound. The verdicts are the
monitor's, which judged every rule at every step of the same run."""

from __future__ import annotations

from .record import ADMISSION, CHUNK, Recording

COLUMNS = ("step", "BUDGET", "SLOTS", "KV", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS (emitted/max_new)")
WIDTHS = (5, 9, 7, 10, 22, 14)


def rows(recording: Recording) -> list[str]:
    cfg = recording.config
    arrivals = {o.arrival.rid: o.arrival for o in recording.offers if o.accepted}
    emitted: dict[int, int] = {}
    running: set[int] = set()
    out = [_line(COLUMNS)]
    for view in recording.steps:
        running |= {e.rid for e in view.entries if e.kind == ADMISSION}
        chunks, first = [], []
        for e in view.entries:
            if e.kind in (CHUNK, ADMISSION):
                start = e.start or 0
                prompt = arrivals[e.rid].prompt_len
                chunks.append(f"r{e.rid} {start}-{start + e.n}/{prompt}")
                if start + e.n == prompt and e.rid in view.emitted:
                    first.append(f"r{e.rid}")
        for rid in view.emitted:
            emitted[rid] = emitted.get(rid, 0) + 1
        tokens = " ".join(f"r{rid} {emitted.get(rid, 0)}/{arrivals[rid].max_new}" for rid in sorted(running))
        cells = (
            str(view.step), bound(view.num_tokens, cfg.token_budget), bound(len(running), cfg.max_seqs),
            bound(view.kv_in_use, cfg.kv_tokens), " ".join(chunks) or "-", " ".join(first) or "-", tokens,
        )
        out.append(_line(cells))
        running -= set(view.finished)
    return out


def bound(value: int, limit: int) -> str:
    return f"{value} <= {limit}" if value <= limit else f"{value} > {limit} !"


def _line(cells: tuple[str, ...]) -> str:
    head = [f"{cells[0]:>{WIDTHS[0]}}", *(f"{c:<{w}}" for c, w in zip(cells[1:-1], WIDTHS[1:], strict=True))]
    return "  ".join([*head, cells[-1]]).rstrip()

