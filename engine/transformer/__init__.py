"""The transformer of the notes: TransformerLM, KV cache, attention variants, cache sizes, objectives."""
