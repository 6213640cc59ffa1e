"""The output checks on the tiny model (one rank, fp32): request isolation and its leaking-executor
negative control; seeded sampling replayed by the exactness check at temperature 1, and its control
(draws seeded by the step); exactness failing on the future-token mask; seeds of any size."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from stallfree.executor.engine.job import Job  # noqa: E402
from stallfree.executor.exactness.equivalence import compare  # noqa: E402
from stallfree.executor.exactness.isolation import isolation, perturbed  # noqa: E402
from stallfree.executor.layers.group import Group  # noqa: E402
from stallfree.executor.layers.sampler import Sampler  # noqa: E402
from stallfree.executor.runs.launch import run_local  # noqa: E402
from stallfree.executor.runs.runspec import RunSpec  # noqa: E402
from stallfree.spec import Arrival, Config, Workload  # noqa: E402

# Prompts of 5 to 41 tokens arriving over 4 steps; budget 7 chunks the long ones.
WORKLOAD = Workload(Config(7, 4, 256), (Arrival(0, 23, 4, 0), Arrival(1, 5, 6, 0), Arrival(2, 41, 5, 1),
                                        Arrival(3, 9, 3, 2)))
VOCAB = 2048


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    return RunSpec((), tp=1, dtype="fp32").build(Group())


def run(model, *jobs: Job):  # type: ignore[no-untyped-def]
    return run_local(RunSpec(jobs, tp=1, dtype="fp32"), model).results


def job(variant: str | None = None, temperature: float = 0.0) -> Job:
    return Job(WORKLOAD, keep_logits=True, variant=variant, temperature=temperature)


def test_isolation_holds_and_fails_on_a_leaking_executor(model) -> None:  # type: ignore[no-untyped-def]
    """ISOLATION: the correct executor keeps every other request's logits bit-for-bit when rid 0's
    prompt changes; one whose decodes read another request's KV cell (finite: no step check sees
    it) lets the change through."""
    base, changed, leaky, leaky_changed = run(
        model, job(), perturbed(job(), 0, 0, VOCAB), job("ReadOtherRequest"),
        perturbed(job("ReadOtherRequest"), 0, 0, VOCAB))
    good = isolation(base, changed, 0)
    assert good.ok is True and good.num_requests == 3, good.summary()
    assert leaky.ok, leaky.violation
    bad = isolation(leaky, leaky_changed, 0)
    assert bad.ok is False and bad.changed, bad.summary()


def test_isolation_of_a_request_alone_is_not_judged(model) -> None:  # type: ignore[no-untyped-def]
    alone = Job(Workload(Config(7, 4, 256), (Arrival(0, 9, 3, 0),)), keep_logits=True)
    base, changed = run(model, alone, perturbed(alone, 0, 0, VOCAB))
    report = isolation(base, changed, 0)
    assert report.ok is None and "not judged" in report.summary()


def test_sampling_replayed_at_temperature_1_and_fails_on_step_seeded_draws(model) -> None:  # type: ignore[no-untyped-def]
    """Sampled tokens are replayed by the reference with the same seeded noise: every token of a
    temperature-1 run equals the replay; draws seeded by the step instead of the token index do not."""
    sampled, by_step = run(model, job(temperature=1.0), job("DrawsByStep", temperature=1.0))
    spec = RunSpec((), tp=1, dtype="fp32")
    good = compare(spec, sampled, model, sampler=Sampler(1.0, 0))
    assert good.ok and good.num_equal == good.num_tokens, good.summary()
    greedy = compare(spec, sampled, model)  # judged as if greedy, a sampled run is mostly mismatches
    assert not greedy.ok
    bad = compare(spec, by_step, model, sampler=Sampler(1.0, 0))
    assert not bad.ok and bad.mismatches, bad.summary()


def test_exactness_fails_on_future_token_mask(model) -> None:  # type: ignore[no-untyped-def]
    (result,) = run(model, job("SeeOneFutureToken"))
    assert result.ok, result.violation
    report = compare(RunSpec((), tp=1, dtype="fp32"), result, model)
    assert not report.ok and report.max_logit_diff > 100 * report.logit_tol, report.summary()


def test_seeds_of_any_size_draw_weights_and_prompts() -> None:
    """A seed past 2^64 / 1,000,003 (about 1.8e13) used to overflow torch's seed; mixes are taken mod 2^64."""
    from stallfree.executor.engine.stream import prompt_tokens
    from stallfree.executor.models.weights import random_source

    big = 10**20
    w = random_source(big)("model.layers.0.mlp.up_proj.weight", (4, 4))
    assert torch.isfinite(w).all() and not torch.equal(w, random_source(0)("model.layers.0.mlp.up_proj.weight", (4, 4)))
    assert len(prompt_tokens(big, 3, 7, VOCAB)) == 7
    assert 0 <= Sampler(1.0, big).sample(torch.zeros(VOCAB), 5, 2) < VOCAB
