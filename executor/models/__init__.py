"""The model and its weights: shapes (config), the transformer (model), where weights come from
(weights, checkpoints, gguf_file), text in and out (tokenizer), seeded generators (seeds)."""
