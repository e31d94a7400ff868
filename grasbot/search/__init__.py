"""Retrieval: the French tokenizer, the vault lexicon, spelling correction, grounding statistics and the BM25F +
signals index (`index`). Engine layer: imports the vault model only, no web, LLM or UI toolkit."""
