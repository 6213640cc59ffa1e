"""FP8 on the step path, checked: request isolation holds bit for bit in fp8 (each token's activations
are quantized with its own scale), and fails on the planted bug a per-token scale guards against,
one activation scale shared by every request of the step (a per-batch scale)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from stallfree.executor.engine.broken import per_batch_scale  # noqa: E402
from stallfree.executor.engine.job import Job  # noqa: E402
from stallfree.executor.exactness.isolation import isolation, perturbed  # noqa: E402
from stallfree.executor.layers import parallel  # noqa: E402
from stallfree.executor.layers.group import Group  # noqa: E402
from stallfree.executor.runs.launch import run_local  # noqa: E402
from stallfree.executor.runs.runspec import RunSpec  # noqa: E402
from stallfree.spec import Arrival, Config, Workload  # noqa: E402

# Four requests that share steps: rid 0's prompt is the one changed.
WORKLOAD = Workload(Config(16, 4, 256), (Arrival(0, 20, 6, 0), Arrival(1, 12, 6, 0), Arrival(2, 9, 6, 1),
                                         Arrival(3, 30, 4, 2)))
BASE = Job(WORKLOAD, keep_logits=True, label="fp8")
JOBS = (BASE, perturbed(BASE, 0, 0, 2048))

def fp8_isolation(monkeypatch: pytest.MonkeyPatch | None = None):  # type: ignore[no-untyped-def]
    spec = RunSpec(JOBS, tp=1, dtype="fp8")
    model = spec.build(Group())
    if monkeypatch is not None:  # after the weights are quantized: only the activations' scale is planted
        monkeypatch.setattr(parallel, "linear", per_batch_scale)
    results = run_local(spec, model).results
    assert all(r.ok for r in results), [r.violation for r in results]
    return isolation(results[0], results[1], 0)


def test_isolation_holds_bit_for_bit_in_fp8() -> None:
    report = fp8_isolation()
    assert report.ok, report.summary()
    assert report.num_requests == 3


def test_isolation_fails_on_a_per_batch_fp8_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    report = fp8_isolation(monkeypatch)
    assert report.ok is False, report.summary()
    assert "ISOLATION        BROKEN" in report.summary()
