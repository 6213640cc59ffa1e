"""Step time from a step's tokens: a roofline over the deployment's compute and memory.

Two modes:
- `floor`: only the weights. Compute is 2 x params FLOPs per token at peak; memory is one read of
  every weight per step. A step takes the larger of the two. This is the contract's chain: the
  budget sets the compute floor of a full step (2,048 tokens: 36.5 ms for Llama 3.3 70B on four
  H100 in FP8), and no step, however small, beats the weight read (5.3 ms there).
- `full`: the floor plus what grows with context: attention FLOPs for every (query, cached
  position) pair, and the KV cache each step reads and writes. Still the larger of compute and
  memory time, at 100% of peak: a lower bound that a real engine approaches, not a prediction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .deployment import Deployment
from .load import StepLoad

MODES = ("floor", "full")


@dataclass(frozen=True, slots=True)
class Roofline:
    deployment: Deployment
    mode: str = "floor"
    # Seconds per unit of work, derived once: the simulator prices hundreds of thousands of steps.
    seconds_per_token: float = field(init=False)
    weight_read_seconds: float = field(init=False)
    seconds_per_pair: float = field(init=False)
    seconds_per_kv_token: float = field(init=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r} is not a cost mode; choose one of {', '.join(MODES)}")
        d = self.deployment
        full = self.mode == "full"
        object.__setattr__(self, "seconds_per_token", d.model.flops_per_token / d.peak_flops)
        object.__setattr__(self, "weight_read_seconds", d.weight_bytes / d.bandwidth)
        pair = d.model.attention_flops_per_pair / d.attention_flops if full else 0.0
        object.__setattr__(self, "seconds_per_pair", pair)
        kv = d.kv_bytes_per_token / d.bandwidth if full else 0.0
        object.__setattr__(self, "seconds_per_kv_token", kv)

    def compute_seconds(self, load: StepLoad) -> float:
        return load.num_tokens * self.seconds_per_token + load.attention_pairs * self.seconds_per_pair

    def memory_seconds(self, load: StepLoad) -> float:
        """Weights read once; KV read back, and written for every new position."""
        kv_tokens = load.kv_read_tokens + load.num_tokens
        return self.weight_read_seconds + kv_tokens * self.seconds_per_kv_token

    def step_seconds(self, load: StepLoad) -> float:
        """The time of a step: compute or memory, whichever is slower. An empty step costs nothing."""
        if load.num_tokens == 0:
            return 0.0
        return max(self.compute_seconds(load), self.memory_seconds(load))

    def seconds(self, num_tokens: int, attention_pairs: int, kv_read_tokens: int) -> float:
        """`step_seconds` on plain numbers, for the simulator's inner loop."""
        if num_tokens == 0:
            return 0.0
        compute = num_tokens * self.seconds_per_token + attention_pairs * self.seconds_per_pair
        memory = self.weight_read_seconds + (kv_read_tokens + num_tokens) * self.seconds_per_kv_token
        return compute if compute > memory else memory

    @property
    def decode_floor_seconds(self) -> float:
        """No step is faster than one read of the weights: the best time per output token."""
        return self.weight_read_seconds
