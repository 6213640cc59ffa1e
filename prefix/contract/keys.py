"""Block identity in the prefix-caching design: what a request's tokens are, and the key of each block.

A request's `content` says what its leading prompt tokens are: a tuple of segments (content_id,
length), content_id >= 0, lengths >= 1, summing to at most prompt_len. Token `o` of a segment is the
token (content_id, o): two prompts that start with the same segments start with the same tokens. A
system prompt is one segment shared by many requests; a token-id prompt is segments of length 1. The
rest of the prompt and every emitted token are the request's own: no other request has them.

A full block within the content is keyed by its tokens and by the key of the block before it (so the
same tokens after a different prefix are a different block). A block holding any token of the
request's own is keyed by the request (OWN, rid, index): only its own recompute can reuse it. The keys
are the contract's definition of "the same tokens", shared by the scheduler and the monitor's shadow
as `Request` is; what each does with them (hits, counts, eviction) each decides on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from stallfree.spec.errors import FieldTypeError, InvalidField

OWN = -1  # the first element of a block key held by one request alone
Content = tuple[tuple[int, int], ...]
BlockKey = int | tuple[int, int, int]


def check_content(content: object, prompt_len: int) -> Content:
    """`content` as a tuple of (content_id, length) pairs; raises naming the field and value if it is
    not one, or if its lengths exceed `prompt_len`."""
    try:
        segments = tuple(cast(Iterable[object], content))  # raises TypeError where it is not iterable
    except TypeError:
        raise FieldTypeError(f"content must be a sequence of (content_id, length) pairs, got {content!r:.80}") from None
    total = 0
    out: list[tuple[int, int]] = []
    for i, segment in enumerate(segments):
        try:
            cid, length = cast(tuple[object, object], segment)
        except (TypeError, ValueError):
            raise InvalidField(f"content[{i}] must be a (content_id, length) pair, got {segment!r:.60}") from None
        if not isinstance(cid, int) or not isinstance(length, int) or type(cid) is bool or type(length) is bool \
                or cid < 0 or length < 1:
            raise InvalidField(f"content[{i}] must be ints content_id >= 0 and length >= 1, got {segment!r:.60}")
        total += length
        out.append((cid, length))
    if total > prompt_len:
        raise InvalidField(f"content covers {total} tokens; prompt_len is {prompt_len}")
    return tuple(out)


def content_keys(content: Content, block_size: int) -> list[int]:
    """The keys of the full blocks the content covers, in order: each hashes its tokens' pieces
    (content_id, first offset, end offset) and the key before it."""
    keys: list[int] = []
    parent = 0
    pieces: list[tuple[int, int, int]] = []
    room = block_size
    for cid, length in content:
        offset = 0
        while offset < length:
            take = min(room, length - offset)
            pieces.append((cid, offset, offset + take))  # segments start at offset 0: pieces are canonical
            offset += take
            room -= take
            if room == 0:
                parent = hash((parent, tuple(pieces)))
                keys.append(parent)
                pieces, room = [], block_size
    return keys


def own_key(rid: int, index: int) -> tuple[int, int, int]:
    """The key of block `index` of request `rid` where it holds a token of the request's own."""
    return (OWN, rid, index)
