"""Engine step traces as JSON Lines: `tracefile` (the format, read as a stream and written),
`tracecheck` (judge a trace against the rules), `record` (write any scheduler's run as a trace) and
`synthetic` (generated traces for tests and benchmarks)."""
