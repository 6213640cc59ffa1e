"""Real engines behind the kit: vLLM's own V1 scheduler driven in-process through the plain protocol
(`vllm_adapter`), through the paged design's protocol, preemptions, stops and cancels included
(`vllm_paged`), and with prefix caching on through the prefix design's (`vllm_prefix`); bugs planted
into subclasses of vLLM's scheduler (`vllm_faults`); a recorder that writes trace v2 from a whole vLLM
engine run (`vllm_recorder`); converters of traces in an engine's own terms, vLLM's step traces
(`import_vllm`) and any engine's scheduling events (`import_events`), with what their cached prefixes
rest on (`cache_claims`). `vllm_setup` builds the configs the vLLM modules drive. `import_vllm`,
`import_events` and `cache_claims` need no vLLM; the rest do (`scripts/vllm-venv.sh` sets up a venv
with it). Nothing here is imported by the rest of stallfree but `import-trace`."""
