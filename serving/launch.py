"""`stallfree serve`'s start-up: vLLM's own server arguments read by vLLM's own parser, judged against
the mapping before anything starts, then the arguments that put stallfree's scheduler in vLLM's hands.

Options vLLM turns on by default that do not map (prefix caching, async scheduling) are turned off
here, and said so; the same options given explicitly are refused, as is a scheduler_cls of the user's.
"""

from __future__ import annotations

import json
from typing import Any

from .mapping import Deployment, Unmapped, option_refusals

CLASSES = {"reservation": "stallfree.serving.vllm_scheduler.ReservationScheduler",
           "paged": "stallfree.serving.vllm_scheduler.PagedScheduler"}


def parse(vllm_args: list[str]) -> Any:
    """vLLM's namespace for `vllm serve <vllm_args>`; argparse's SystemExit(2) on bad arguments."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="stallfree serve ... --")
    ServeSubcommand().subparser_init(parser.add_subparsers(dest="subparser"))
    return parser.parse_args(["serve", *vllm_args])


def deployment(namespace: Any) -> Deployment:
    """The options of a server's namespace the mapping judges (sizes come later, from the engine)."""
    get = namespace.__dict__.get
    return Deployment(
        max_num_batched_tokens=get("max_num_batched_tokens") or 1, max_num_seqs=get("max_num_seqs") or 1,
        num_blocks=2, block_size=get("block_size") or 1, max_model_len=1,
        enable_prefix_caching=bool(get("enable_prefix_caching")), speculative=get("speculative_config") is not None,
        async_scheduling=bool(get("async_scheduling")),
        chunked_prefill=get("enable_chunked_prefill") is not False, policy=str(get("scheduling_policy") or "fcfs"),
        long_prefill_token_threshold=get("long_prefill_token_threshold") or 0,
        pipeline_parallel_size=get("pipeline_parallel_size") or 1, kv_transfer=get("kv_transfer_config") is not None,
    )


def server_args(vllm_args: list[str], design: str, options: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The arguments for `vllm serve` with stallfree's `design`, and notes on what was set. Raises
    Unmapped listing every refusal."""
    namespace = parse(vllm_args)
    found = option_refusals(deployment(namespace), design)
    if namespace.__dict__.get("scheduler_cls") not in (None, "", "vllm.v1.core.sched.scheduler.Scheduler"):
        found.append(f"--scheduler-cls {namespace.scheduler_cls}: stallfree serve passes its own")
    extra = namespace.__dict__.get("additional_config") or {}
    if "stallfree" in extra:
        found.append("--additional-config with a 'stallfree' key: stallfree serve sets it from its own options")
    if found:
        raise Unmapped(f"stallfree's {design} scheduler cannot run this vLLM config:\n  - " + "\n  - ".join(found))
    notes, added = [], ["--scheduler-cls", CLASSES[design]]
    if namespace.__dict__.get("enable_prefix_caching") is None:
        added.append("--no-enable-prefix-caching")
        notes.append("prefix caching off (vLLM's default is on; a cached prefix does not map)")
    if namespace.__dict__.get("async_scheduling") is None:
        added.append("--no-async-scheduling")
        notes.append("async scheduling off (the contract plans a step once the one before completed)")
    added += ["--additional-config", json.dumps({**extra, "stallfree": options})]
    return [*vllm_args, *added], notes
