"""From a question to what the model is given: conversation turns, context planning and the prompt. Uses the
engine (vault, search); never the service."""
