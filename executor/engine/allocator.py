"""KV cell allocation: a request reserves prompt_len + max_new cells when the scheduler admits it and
returns them all when it finishes. Cells are single positions, so any free cell serves any request:
a reservation never fails for want of contiguous memory."""

from __future__ import annotations


class CellAllocator:
    def __init__(self, kv_tokens: int) -> None:
        self.kv_tokens = kv_tokens
        self._free = list(range(kv_tokens - 1, -1, -1))  # a stack: the lowest cells go out first

    @property
    def num_free(self) -> int:
        return len(self._free)

    def reserve(self, num_cells: int) -> list[int]:
        """Take `num_cells` free cells. Raises ValueError (nothing taken) if too few are free."""
        if num_cells > len(self._free):
            raise ValueError(f"reserving {num_cells} KV cells with only {len(self._free)} of {self.kv_tokens} free")
        taken = self._free[-num_cells:][::-1]
        del self._free[-num_cells:]
        return taken

    def release(self, cells: list[int]) -> None:
        self._free.extend(reversed(cells))
