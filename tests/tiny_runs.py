"""Runs on the tiny model with random weights, one rank, in this process: the model is built once
per dtype for the whole test session (the runs reset only the KV cache)."""

from __future__ import annotations

from stallfree.executor.engine.job import Job, JobResult
from stallfree.executor.layers.group import Group
from stallfree.executor.models.model import Transformer
from stallfree.executor.runs.launch import run_local
from stallfree.executor.runs.runspec import RunSpec

MODELS: dict[str, Transformer] = {}


def model(dtype: str = "fp32") -> Transformer:
    if dtype not in MODELS:
        MODELS[dtype] = RunSpec((), tp=1, dtype=dtype).build(Group())
    return MODELS[dtype]


def play(*jobs: Job, dtype: str = "fp32") -> list[JobResult]:
    return run_local(RunSpec(tuple(jobs), tp=1, dtype=dtype), model(dtype)).results
