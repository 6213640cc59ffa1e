"""The contract's refusals that an engine's front end makes, not its scheduler: shared by the adapters
of engines whose scheduler checks no request (vLLM's, SGLang's)."""

from __future__ import annotations


def check_request(rid: object, prompt_len: object, max_new: object, taken: set[int]) -> None:
    """Ints, a rid >= 0 not taken, a prompt and an output of at least one token (TypeError or
    ValueError naming the field)."""
    for name, value in (("rid", rid), ("prompt_len", prompt_len), ("max_new", max_new)):
        if type(value) is not int:
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    assert isinstance(rid, int) and isinstance(prompt_len, int) and isinstance(max_new, int)
    if rid < 0:
        raise ValueError(f"rid must be >= 0, got {rid}")
    if prompt_len < 1 or max_new < 1:
        raise ValueError(f"prompt_len and max_new must be >= 1, got {prompt_len} and {max_new}")
    if rid in taken:
        raise ValueError(f"rid {rid} is already taken")
