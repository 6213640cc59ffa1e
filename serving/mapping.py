"""The contract's limits read off a vLLM deployment, and what of vLLM does not map onto them.

Plain values in, plain values out: nothing here imports vLLM, so the mapping is tested in the main
venv. `stallfree.serving.vllm_scheduler` reads the numbers off vLLM's config and calls these.

- token budget B = `max_num_batched_tokens`; slots S = `max_num_seqs`;
- K = the tokens of the blocks vLLM allocated for the KV cache: `(num_blocks - 1) * block_size` (the
  block pool keeps one block as its shared null block);
- a request's reservation is rounded up to whole blocks (`reserved_max_new`): vLLM allocates KV block by
  block, so with every reservation a whole number of blocks, the reservations fitting in K means the
  blocks fit in the pool, and vLLM's on-demand allocation never fails under the reservation design.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stallfree.paged import default_watermark
from stallfree.spec.types import Config

RESERVATION = "reservation"
PAGED = "paged"


class Unmapped(ValueError):
    """A vLLM option the contract has no word for: refused at start-up, before anything runs."""


@dataclass(frozen=True, slots=True)
class Deployment:
    """What the mapping reads off vLLM's config (plain values)."""

    max_num_batched_tokens: int
    max_num_seqs: int
    num_blocks: int  # the block pool's, its null block included
    block_size: int
    max_model_len: int
    enable_prefix_caching: bool = False
    speculative: bool = False  # a speculative decoding config is set
    async_scheduling: bool = False
    chunked_prefill: bool = True
    policy: str = "fcfs"
    long_prefill_token_threshold: int = 0
    pipeline_parallel_size: int = 1
    kv_transfer: bool = False  # a KV connector (disaggregated prefill, offloading) is configured
    num_kv_groups: int = 1  # KV cache groups (one: every layer full attention)


def kv_tokens(deployment: Deployment) -> int:
    """K: the tokens the pool's blocks hold, less the null block."""
    return (deployment.num_blocks - 1) * deployment.block_size


def contract_config(deployment: Deployment) -> Config:
    """The contract's (B, S, K) for `deployment` (`check` first says whether it maps)."""
    return Config(deployment.max_num_batched_tokens, deployment.max_num_seqs, kv_tokens(deployment))


def refusals(deployment: Deployment, design: str) -> list[str]:
    """Why `design` cannot run `deployment`, one message per option that does not map (none: it maps)."""
    found = option_refusals(deployment, design)
    return found + _sizes(deployment, design) if design in DESIGNS else found


def option_refusals(deployment: Deployment, design: str) -> list[str]:
    """The refusals known before vLLM sizes its KV cache: the options alone."""
    if design not in DESIGNS:
        return [f"design {design!r} is unknown; the designs are {', '.join(DESIGNS)}"]
    found = []
    if deployment.enable_prefix_caching:
        found.append(MAPPINGS[design].prefix_caching)
    if deployment.speculative:
        found.append("speculative decoding: the contract emits at most one token a step per request (TOKENS); "
                     "drop --speculative-config")
    if deployment.async_scheduling:
        found.append("async_scheduling=True: vLLM would plan step n+1 before step n completes, and the contract's "
                     "protocol is schedule() then complete(); pass --no-async-scheduling")
    if not deployment.chunked_prefill:
        found.append("enable_chunked_prefill=False: stallfree's designs chunk prompts to the budget; "
                     "pass --enable-chunked-prefill")
    return found + _engine(deployment)


def _engine(deployment: Deployment) -> list[str]:
    found = []
    if deployment.policy != "fcfs":
        found.append(f"scheduling_policy={deployment.policy!r}: stallfree's designs admit first come first served "
                     "(FCFS); drop --scheduling-policy")
    if deployment.long_prefill_token_threshold:
        found.append(f"long_prefill_token_threshold={deployment.long_prefill_token_threshold}: stallfree sizes "
                     "chunks by the budget left (PARTIAL-NEXT), so the option would be ignored; drop it")
    if deployment.pipeline_parallel_size != 1:
        found.append(f"pipeline_parallel_size={deployment.pipeline_parallel_size}: vLLM would keep several plans "
                     "in flight, and the contract's protocol is one schedule() then its complete()")
    if deployment.kv_transfer:
        found.append("a KV connector (--kv-transfer-config): KV loaded from elsewhere is a cached prefix, which the "
                     "contract has no word for")
    if deployment.num_kv_groups != 1:
        found.append(f"{deployment.num_kv_groups} KV cache groups (sliding window, mamba or mixed layers): the "
                     "designs count one pool of full-attention blocks")
    return found


def _sizes(deployment: Deployment, design: str) -> list[str]:
    if kv_tokens(deployment) < 1:
        return [f"num_blocks={deployment.num_blocks}: the KV cache holds no block besides the null block"]
    never_fit = MAPPINGS[design].never_fit(deployment)
    return [] if never_fit is None else [never_fit]


def _reservation_never_fit(deployment: Deployment) -> str | None:
    """NEVER-FIT under the reservation design: the longest request's whole reservation exceeds K."""
    k = kv_tokens(deployment)
    longest = blocks(deployment.max_model_len, deployment.block_size) * deployment.block_size
    if k >= longest:
        return None
    return (f"max_model_len={deployment.max_model_len} needs {longest} KV tokens in blocks of "
            f"{deployment.block_size}, and the KV cache holds {k} (K): a request vLLM accepts could "
            "never be reserved (NEVER-FIT); lower --max-model-len or give the cache more blocks")


def _paged_never_fit(deployment: Deployment) -> str | None:
    """NEVER-FIT under the paged design: the longest request's peak blocks exceed the pool less its
    watermark, so it could never run alone."""
    usable = deployment.num_blocks - 1
    peak = blocks(deployment.max_model_len - 1, deployment.block_size)
    if peak <= usable - default_watermark(usable):
        return None
    return (f"max_model_len={deployment.max_model_len} needs {peak} blocks of {deployment.block_size} at its "
            f"peak, and the pool has {usable} less a watermark of {default_watermark(usable)}: a request vLLM "
            "accepts could never run alone (NEVER-FIT); lower --max-model-len or give the cache more blocks")


@dataclass(frozen=True, slots=True)
class DesignMapping:
    """What maps differently under one design: why it refuses prefix caching, and its NEVER-FIT test
    of the deployment's sizes (None: every request vLLM accepts can run)."""

    prefix_caching: str
    never_fit: Callable[[Deployment], str | None]


MAPPINGS: dict[str, DesignMapping] = {
    RESERVATION: DesignMapping(
        "enable_prefix_caching=True: the reservation design takes prompt_len + max_new at admission and "
        "prefills every prompt position once (PREFILL-ONCE); a cached prefix skips positions. "
        "Pass --no-enable-prefix-caching", _reservation_never_fit),
    PAGED: DesignMapping(
        "enable_prefix_caching=True: the paged design recomputes a preempted request from position 0 "
        "(RECOMPUTE) and has no word for a cached prefix. Pass --no-enable-prefix-caching", _paged_never_fit),
}
DESIGNS = tuple(MAPPINGS)


def check(deployment: Deployment, design: str) -> Config:
    """The contract's config for `deployment` under `design`, or Unmapped listing every refusal."""
    found = refusals(deployment, design)
    if found:
        raise Unmapped(f"stallfree's {design} scheduler cannot run this vLLM config:\n  - " + "\n  - ".join(found))
    return contract_config(deployment)


def blocks(num_tokens: int, block_size: int) -> int:
    return -(-num_tokens // block_size)


def reserved_max_new(prompt_len: int, max_tokens: int, block_size: int) -> int:
    """The max_new stallfree's reservation design is given for a vLLM request: its max_tokens, plus the
    tokens that round prompt_len + max_tokens up to whole blocks. vLLM ends the request at max_tokens;
    the scheduler hears that end as a stop on that step's token (rule TOKENS allows a stop on any token
    emitted), so the padding is reserved but never emitted."""
    return blocks(prompt_len + max_tokens, block_size) * block_size - prompt_len
