"""SmolLM2-135M-Instruct with its real weights (the main job's GGUF, converted once by
`stallfree.serving.smollm2`, no download) in vLLM's CPU engine: the same prompts through vLLM's own
scheduler and through stallfree's reservation and paged designs give the same greedy tokens, token for
token, real text, with ends on EOS (no ignore_eos), a stop string and max_tokens; the monitor judges
every step and every rule holds. Deep (`--deep`): three engines over a 30-layer model take minutes on a
shared 2-core machine; the tiny dummy-weights model covers the same paths in the default run."""

from __future__ import annotations

import gc

import pytest
from vllm_guard import require_vllm

require_vllm()

from vllm import SamplingParams  # noqa: E402

from stallfree.serving.offline import Arrival, build, drive  # noqa: E402
from stallfree.serving.smollm2 import model_folder  # noqa: E402
from stallfree.serving.vllm_scheduler import PagedScheduler, ReservationScheduler  # noqa: E402
from stallfree.spec.verdict import Verdict  # noqa: E402

pytestmark = pytest.mark.deep

# Budget 32: the longer prompts are chunked beside decodes; 6 usable blocks of 32 make the paged design
# preempt and the reservation design hold fewer requests at once.
ENGINE = {"num_blocks": 7, "max_model_len": 96, "budget": 32, "max_seqs": 4}
PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a city by the sea,",
           "Water boils at", "List three colours of the rainbow:"]


def workload() -> list[Arrival]:
    greedy = {"temperature": 0.0}
    return [Arrival(PROMPTS[0], SamplingParams(max_tokens=40, **greedy), 0),  # ends on EOS, or runs out
            Arrival(PROMPTS[1], SamplingParams(max_tokens=40, stop=["return"], **greedy), 0),  # a stop string
            Arrival(PROMPTS[2], SamplingParams(max_tokens=30, ignore_eos=True, **greedy), 1),
            Arrival(PROMPTS[3], SamplingParams(max_tokens=24, **greedy), 2),
            Arrival(PROMPTS[4], SamplingParams(max_tokens=32, **greedy), 3)]


@pytest.fixture(scope="module")
def runs() -> dict[str, object]:
    folder, out = model_folder(), {}
    for name, cls in (("vllm", None), ("reservation", ReservationScheduler), ("paged", PagedScheduler)):
        engine = build(cls, model=folder, **ENGINE)
        out[name] = drive(engine, workload())
        del engine  # one engine at a time: a shutdown tears down vLLM's process-wide state
        gc.collect()
    return out


def answer(run: object, i: int) -> tuple[list[int], str, str]:
    o = run.outputs[i].outputs[0]  # type: ignore[attr-defined]
    return list(o.token_ids), o.text, o.finish_reason


@pytest.mark.parametrize("design", ["reservation", "paged"])
def test_real_weights_greedy_tokens_are_vllms_token_for_token(runs: dict[str, object], design: str) -> None:
    for i in range(len(PROMPTS)):
        assert answer(runs[design], i) == answer(runs["vllm"], i), f"request {i}"
    texts = [answer(runs["vllm"], i)[1] for i in range(len(PROMPTS))]
    assert all(len(t.split()) >= 2 for t in texts), texts  # real text, words, from real weights
    assert answer(runs["vllm"], 1)[2] == "stop"  # the stop string ended it
    live = runs[design].scheduler.live  # type: ignore[attr-defined]
    assert set(live.verdicts().values()) == {Verdict.HOLDS}, live.report()
    ends = {rid.rsplit("-", 1)[0]: how for rid, how in runs[design].scheduler.ends.items()}  # type: ignore[attr-defined]
    assert ends["1"] == "stop"  # the stop string: a stop on its token, not a cancel
