"""The HTTP service: FastAPI app, settings, conversation memory, Langfuse tracing and the `grasbot` CLI."""
