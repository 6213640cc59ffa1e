"""Real engines behind the kit: vLLM's own V1 scheduler driven in-process through the plain protocol
(`vllm_adapter`), a recorder that writes trace v2 from a whole vLLM engine run (`vllm_recorder`), and a
converter for step traces recorded in vLLM's own terms (`import_vllm`). `vllm_setup` builds the
configs both drive. Everything but `import_vllm` needs vLLM (`scripts/vllm-venv.sh` sets up a venv
with it); nothing here is imported by the rest of stallfree."""
