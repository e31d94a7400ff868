"""GrasBot: a deterministic retrieval engine over the public notes of an Obsidian vault, and the API that
answers a site's visitors from them with a local LLM.

The names below are the public API (what `vaulttools` and other tools use; docs/architecture.md says which
layer each belongs to)::

    from grasbot import Vault, SearchIndex, RetrievalPipeline

    vault = Vault.load("vault")
    index = SearchIndex.build(vault)
    retrieval = RetrievalPipeline(index).retrieve("C'est quoi push_swap ?")

Each name is imported from its module on first use (PEP 562), so that `import grasbot.vault` or
`from grasbot import Note` loads only what it needs: a command that never searches never imports the
search engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grasbot.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # the data model (grasbot.model)
    "Heading": "grasbot.model",
    "LIST_FIELDS": "grasbot.model",
    "Link": "grasbot.model",
    "LinkKind": "grasbot.model",
    "LinkStatus": "grasbot.model",
    "Note": "grasbot.model",
    "Problem": "grasbot.model",
    "Resolution": "grasbot.model",
    "STR_FIELDS": "grasbot.model",
    "Span": "grasbot.model",
    "PrivacyPolicy": "grasbot.model",
    "nested_visibility": "grasbot.model",
    "other_visibility_keys": "grasbot.model",
    "privacy_reason": "grasbot.model",
    "says_public": "grasbot.model",
    "says_true": "grasbot.model",
    "visible_to_visitors": "grasbot.model",
    # reading and loading a vault
    "DEFAULT_EXCLUDE": "grasbot.vault",
    "LinkChange": "grasbot.vault",
    "PRIVACY_FILE": "grasbot.vault",
    "Vault": "grasbot.vault",
    "read_privacy": "grasbot.vault",
    "DEFAULT_READERS": "grasbot.readers",
    "Reader": "grasbot.readers",
    "Readers": "grasbot.readers",
    "MarkdownReader": "grasbot.markdown.reader",
    "read_note": "grasbot.markdown.reader",
    # comparing text
    "edit_distance": "grasbot.text",
    "fold": "grasbot.text",
    "name_key": "grasbot.text",
    # retrieval
    "Hit": "grasbot.search.index",
    "SearchConfig": "grasbot.search.index",
    "SearchIndex": "grasbot.search.index",
    "SearchResult": "grasbot.search.index",
    "note_id": "grasbot.search.index",
    "tokenize": "grasbot.search.tokenize",
    # from a question to what the model is given
    "ContextNote": "grasbot.answer.context",
    "plan_context": "grasbot.answer.context",
    "Turn": "grasbot.answer.conversation",
    "Retrieval": "grasbot.answer.pipeline",
    "RetrievalLimits": "grasbot.answer.pipeline",
    "RetrievalPipeline": "grasbot.answer.pipeline",
    "is_servable": "grasbot.answer.prompt",
    "page_fields": "grasbot.answer.pages",
    # who the bot is for a vault (answering profiles)
    "PROFILE_FILE": "grasbot.answer.profile",
    "Profile": "grasbot.answer.profile",
    "ProfileError": "grasbot.answer.profile",
    "load_profile": "grasbot.answer.profile",
    "profile_problems": "grasbot.answer.profile",
    # checking an answer against the passages it was written from
    "LABELS": "grasbot.answer.verify",
    "Passage": "grasbot.answer.verify",
    "Verification": "grasbot.answer.verify",
    "note_passage": "grasbot.answer.verify",
    "subject_names": "grasbot.answer.verify",
    "verify": "grasbot.answer.verify",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from grasbot.answer.context import ContextNote, plan_context
    from grasbot.answer.conversation import Turn
    from grasbot.answer.pipeline import Retrieval, RetrievalLimits, RetrievalPipeline
    from grasbot.answer.profile import PROFILE_FILE, Profile, ProfileError, load_profile, profile_problems
    from grasbot.answer.prompt import is_servable
    from grasbot.answer.verify import LABELS, Passage, Verification, note_passage, subject_names, verify
    from grasbot.markdown.reader import MarkdownReader, read_note
    from grasbot.model import (
        LIST_FIELDS,
        STR_FIELDS,
        Heading,
        Link,
        LinkKind,
        LinkStatus,
        Note,
        Problem,
        Resolution,
        Span,
        other_visibility_keys,
        visible_to_visitors,
    )
    from grasbot.readers import DEFAULT_READERS, Reader, Readers
    from grasbot.search.index import Hit, SearchConfig, SearchIndex, SearchResult, note_id
    from grasbot.search.tokenize import tokenize
    from grasbot.text import edit_distance, fold, name_key
    from grasbot.vault import DEFAULT_EXCLUDE, LinkChange, Vault
