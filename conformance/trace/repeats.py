"""A step line that repeats the last one but for its step number: a run of decodes writes the same plan, tokens
and "finished" line after line. Both checkers take such a line as the last step again, under its own number,
without reading it: the last line was read whole and held no other "step" key (both readers refuse a key given
twice), so the same text after the head reads to the same fields. The step number is still checked: the head
is made from the number expected, so a line written twice with its own number is read whole ("step must be N").
"""

from __future__ import annotations

from .v2 import STEP_HEADS  # how a step line begins, compact or as json.dumps writes it by default


def after_head(text: bytes | str, step: int) -> tuple[bytes | str, bytes | str] | None:
    """The head's form (to be filled with the next step number) and the line after its head, where `text`
    begins with the head of step `step` as `STEP_HEADS` writes it; else None (the next line is read whole)."""
    for form in STEP_HEADS[type(text) is bytes]:
        head = form % step
        if text.startswith(head):
            return form, text[len(head):]
    return None
