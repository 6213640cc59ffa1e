"""Real engines behind the kit: vLLM's own V1 scheduler driven in-process through the plain protocol
(`vllm_adapter`), through the paged design's protocol, preemptions, stops and cancels included
(`vllm_paged`), and with prefix caching on through the prefix design's (`vllm_prefix`); bugs planted
into subclasses of vLLM's scheduler (`vllm_faults`); a recorder that writes trace v2 from a whole vLLM
engine run (`vllm_recorder`); SGLang's scheduling policy (its `PrefillAdder` over its radix cache)
through the plain protocol (`sglang_adapter`, set up by `sglang_setup`), with a bug planted into a
subclass of its adder (`sglang_faults`) and its runs logged as events (`sglang_recorder`), and with its
stops and its Scheduler's own abort code (`sglang_ends`), bugs planted in its Req and Scheduler
(`sglang_end_faults`); converters
of traces in an engine's own terms, vLLM's step traces
(`import_vllm`) and any engine's scheduling events (`import_events`), with what their cached prefixes
rest on (`cache_claims`). `vllm_setup` builds the configs the vLLM modules drive. `front_end`, `import_vllm`,
`import_events` and `cache_claims` need no vLLM; the rest do (`scripts/vllm-venv.sh` sets up a venv
with it; `scripts/sglang-venv.sh` one with SGLang for the `sglang_` modules). `front_end` holds the
request checks an engine's front end makes, for both. Nothing here is imported by the rest of
stallfree but `import-trace`."""
