"""KV slot allocation: a request reserves prompt_len + max_new slots when the scheduler admits it and
returns them all when it finishes. Slots are single positions, so any free slot serves any request:
a reservation never fails for want of contiguous memory."""

from __future__ import annotations


class SlotAllocator:
    def __init__(self, kv_tokens: int) -> None:
        self.kv_tokens = kv_tokens
        self._free = list(range(kv_tokens - 1, -1, -1))  # a stack: the lowest slots go out first

    @property
    def num_free(self) -> int:
        return len(self._free)

    def reserve(self, num_slots: int) -> list[int]:
        """Take `num_slots` free slots. Raises ValueError (nothing taken) if too few are free."""
        if num_slots > len(self._free):
            raise ValueError(f"reserving {num_slots} KV slots with only {len(self._free)} of {self.kv_tokens} free")
        taken = self._free[-num_slots:][::-1]
        del self._free[-num_slots:]
        return taken

    def release(self, slots: list[int]) -> None:
        self._free.extend(reversed(slots))
