"""Markdown notes: the frontmatter reader (fast path + PyYAML with positions). Engine layer: no web, LLM or UI import."""
