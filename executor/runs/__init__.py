"""Launching and reporting a run: what every rank needs (runspec), one process per rank (launch,
worker) watched by progress stamps (progress), the workloads and prompts it plays (workloads,
prompts), and what it prints (report, text)."""
