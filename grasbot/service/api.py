"""The import path the app factory had before the service was split into modules (docs/architecture.md,
"Layers"): `uvicorn --factory grasbot.service.api:create_app`, as deployed units may still name it, keeps
working. New code imports from the module that holds a name: the factory is grasbot/service/app.py.
"""

from __future__ import annotations

from grasbot.service.app import create_app

__all__ = ["create_app"]
