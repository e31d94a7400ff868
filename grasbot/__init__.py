"""GrasBot: a deterministic retrieval engine over the public notes of an Obsidian vault, and the API that
answers a site's visitors from them with a local LLM."""

__version__ = "0.1.0"
