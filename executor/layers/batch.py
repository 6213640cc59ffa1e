"""The flat batch of one step: what rank 0 broadcasts so that every rank runs the same forward.

All fields are int64 tensors, packed into one tensor for a single broadcast (after a fixed-size
header that says how long each part is). Row `i` of the flat token dimension belongs to sequence
`seq_of_row(i)`; sequences are the plan's entries in plan order.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

OP_STEP, OP_RESET, OP_STOP = 0, 1, 2  # what the other ranks do with the next message
HEADER_LEN = 12  # op, then the length of each packed part (room to spare)


@dataclass(slots=True)
class FlatBatch:
    token_ids: torch.Tensor  # [T]: the tokens of every entry, concatenated in plan order
    positions: torch.Tensor  # [T]: each token's position in its request
    write_cells: torch.Tensor  # [T]: the KV cell each token's key and value go to
    seq_lens: torch.Tensor  # [S]: tokens of each entry (n)
    ctx_lens: torch.Tensor  # [S]: positions each entry's queries may see (start + n)
    ctx_cells: torch.Tensor  # [sum ctx_lens]: each entry's KV cells for positions 0..ctx_len-1
    emit_rows: torch.Tensor  # [E]: rows whose logits are sampled (last prompt position; decodes)
    poison_cells: torch.Tensor  # [P]: cells freed since the last step, to poison before running

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.numel())

    def is_decode_only(self) -> bool:
        return bool((self.seq_lens == 1).all())

    def pack(self, op: int = OP_STEP) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [getattr(self, f.name) for f in fields(self)]
        header = torch.zeros(HEADER_LEN, dtype=torch.int64)
        header[0] = op
        header[1:1 + len(parts)] = torch.tensor([p.numel() for p in parts])
        return header, torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64)

    @classmethod
    def unpack(cls, header: torch.Tensor, payload: torch.Tensor) -> FlatBatch:
        sizes = header[1:1 + len(fields(cls))].tolist()
        return cls(*torch.split(payload, sizes))

    def to(self, device: torch.device | str) -> FlatBatch:
        return FlatBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def control(op: int) -> torch.Tensor:
    header = torch.zeros(HEADER_LEN, dtype=torch.int64)
    header[0] = op
    return header
