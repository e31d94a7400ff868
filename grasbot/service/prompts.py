"""The system prompt from Langfuse Prompts, optional (docs/service.md, "Prompt versions in Langfuse").

With `GRASBOT_PROMPT_NAME` set and Langfuse configured, the system prompt of every answer is the text prompt
of that name and label (`GRASBOT_PROMPT_LABEL`, default `production`), fetched with the SDK's `get_prompt`:
the SDK keeps it for `GRASBOT_PROMPT_CACHE_SECONDS` and then refreshes it in the background, so an edit in
Langfuse (or moving the label to another version) reaches answers without a redeploy.

When Langfuse is down or has no such prompt, the answer uses the profile's local system prompt
(grasbot/answer/profile.py) — never a failed answer. That is said once in the log when it starts and once
when Langfuse's prompt is back; while it lasts, Langfuse is asked again at most once per cache period, so a
down Langfuse costs a question nothing but that one bounded attempt (FETCH_TIMEOUT_SECONDS, no retry).

The generation in the trace is linked to the prompt's name and version (the SDK's `prompt=`), and the
trace's metadata says which prompt answered: `langfuse:<name>@<version>` or `local:<profile>@<version>`.

`push_local_prompt` (the `grasbot prompt push` command) sends the profile's rendered system prompt to
Langfuse as a new version of the prompt, with a label.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from grasbot.answer.profile import Profile

log = logging.getLogger("grasbot.service.prompts")

#: Longest one fetch of the prompt may take (the SDK wants whole seconds); no retry: the local prompt
#: answers at once instead.
FETCH_TIMEOUT_SECONDS = 2
#: After a failed fetch, Langfuse is asked again after the cache period, and at least this long.
MIN_RETRY_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class SystemPrompt:
    """The system prompt an answer uses, and where it came from."""

    text: str
    source: str  # "langfuse" or "local"
    name: str  # the Langfuse prompt's name, or the profile's
    version: str  # the Langfuse prompt's version number, or the profile's digest
    label: str | None = None
    #: the SDK's prompt object, given to the generation as `prompt=` (None for the local prompt)
    client: Any | None = None

    @property
    def ref(self) -> str:
        """`langfuse:<name>@<version>` or `local:<profile>@<version>`: what the trace says answered."""
        return f"{self.source}:{self.name}@{self.version}"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "name": self.name, "version": self.version, "ref": self.ref}
        if self.label is not None:
            out["label"] = self.label
        return out


def local_prompt(profile: Profile) -> SystemPrompt:
    return SystemPrompt(profile.system_prompt, "local", profile.name, profile.version)


class PromptSource:
    """Where answers get their system prompt: Langfuse Prompts when configured, else the profile's.

    `langfuse` is the service's Langfuse client (None when tracing is off: then always the local prompt).
    `system_prompt` blocks (the SDK's first fetch is a plain HTTP call): call it from a worker thread.
    """

    def __init__(self, name: str | None, label: str, cache_seconds: int, langfuse: Any | None) -> None:
        self.name = name
        self.label = label
        self.cache_seconds = cache_seconds
        self._langfuse = langfuse if name else None
        self._lock = threading.Lock()
        self._retry_at = 0.0
        self._failing: str | None = None  # why the local prompt answers now (None: Langfuse's does)
        if name and langfuse is None:
            log.warning(
                "GRASBOT_PROMPT_NAME=%s is set but Langfuse is not configured: answers use the profile's local prompt",
                name,
            )

    @property
    def enabled(self) -> bool:
        return self._langfuse is not None

    def status(self) -> dict[str, Any]:
        """For /health: whether prompts come from Langfuse, and why not when they do not."""
        if not self.enabled:
            return {"source": "local"}
        with self._lock:
            failing = self._failing
        out: dict[str, Any] = {"source": "langfuse", "name": self.name, "label": self.label}
        if failing is not None:
            out["fallback"] = failing
        return out

    def system_prompt(self, profile: Profile) -> SystemPrompt:
        """The system prompt for the next answer (never raises: the local one when Langfuse cannot give it)."""
        local = local_prompt(profile)
        if self._langfuse is None:
            return local
        with self._lock:
            if self._failing is not None and time.monotonic() < self._retry_at:
                return local
        try:
            prompt = self._langfuse.get_prompt(
                self.name,
                label=self.label,
                type="text",
                cache_ttl_seconds=self.cache_seconds,
                max_retries=0,
                fetch_timeout_seconds=FETCH_TIMEOUT_SECONDS,
            )
        except Exception as error:  # noqa: BLE001 - any failure of the SDK or Langfuse: the local prompt
            self._fall_back(_why(error, self.name, self.label))
            return local
        text = getattr(prompt, "prompt", None)
        if getattr(prompt, "is_fallback", False) or not isinstance(text, str) or not text.strip():
            self._fall_back(f"the Langfuse prompt {self.name!r} ({self.label}) is not a non-empty text prompt")
            return local
        with self._lock:
            was = self._failing
            self._failing = None
        if was is not None:
            log.info("the system prompt comes from Langfuse again: %s version %s", self.name, prompt.version)
        return SystemPrompt(text, "langfuse", self.name or "", str(prompt.version), self.label, prompt)

    def _fall_back(self, why: str) -> None:
        with self._lock:
            first = self._failing is None
            self._failing = why
            self._retry_at = time.monotonic() + max(float(self.cache_seconds), MIN_RETRY_SECONDS)
        if first:
            log.warning("%s: answers use the profile's local system prompt until it is back", why)


def _why(error: Exception, name: str | None, label: str) -> str:
    status = getattr(error, "status_code", None)
    if status == 404 or type(error).__name__ == "NotFoundError":
        return f"Langfuse has no prompt {name!r} with the label {label!r}"
    if status is not None:
        return f"Langfuse answered HTTP {status} for the prompt {name!r}"
    return f"Langfuse cannot give the prompt {name!r} ({type(error).__name__})"


def push_local_prompt(langfuse: Any, profile: Profile, name: str, label: str) -> Any:
    """Send `profile`'s rendered system prompt to Langfuse as a new version of `name`, labelled `label`.

    The profile's name and digest go in the version's config and commit message, so a version in Langfuse
    says which local prompt it was made from. Returns the SDK's prompt (its `version` is the new number).
    """
    return langfuse.create_prompt(
        name=name,
        prompt=profile.system_prompt,
        labels=[label],
        type="text",
        config={"profile": profile.name, "profile_version": profile.version, "citation": profile.citation},
        commit_message=f"grasbot prompt push: profile {profile.name} @ {profile.version}",
    )
