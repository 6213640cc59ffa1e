"""What the model is built from: the tensor-parallel group and layers (group, parallel,
padding), FP8 matmuls (fp8), attention over the KV cache (attention, kvcache), sampling
(sampler)."""
