"""LLM backends behind one protocol. Used by the answer and service layers only, never by the engine."""
