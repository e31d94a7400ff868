"""`Vault.visitor_text` decides most texts without resolving their links (`Vault._may_cut`, a pre-check on
the link targets): its answer must be the full parse's, `cut_links` with every link resolved, on every text.

The vaults are real folders read by `Vault.load`; the texts are the notes' own bodies (as the search index and
the prompt read them) and pieces of them, written to be hard for a shortcut: links to hidden notes inside code
spans, fenced blocks, math, comments (which a reader's text drops, joining what surrounds them), reference
definitions, HTML anchors, `obsidian://open` URIs, percent-escapes, other cases and Unicode forms of a name,
`.md` suffixes, relative paths, a wikilink followed by `(…)`, and a public note named like a hidden one.
"""

from __future__ import annotations

import random
import unicodedata
from pathlib import Path

import pytest

from grasbot.links import cut_links
from grasbot.vault import Vault

PRIVATE = "---\nvisibility: private\ntitle: {title}\n---\n# {title}\n\nSecret text.\n"
PUBLIC = "---\ntitle: {title}\n---\n# {title}\n\nPublic text.\n"

#: (path, private): the vault's notes besides the ones the tests write their bodies in
NOTES = [
    ("secrets/Mot de passe.md", True),
    ("secrets/Café crème.md", True),
    ("perso/journal.md", True),
    ("perso/sous/Plan B.md", True),
    ("public/journal.md", False),  # named like a private note: links to it stay
    ("public/Accueil.md", False),
    ("public/Plan B.md", False),
    ("Zeta.md", True),
    ("public/100%AB.md", True),
    ("perso.md", True),  # named like a folder: `..` from inside it leads here
    ("perso/sous.md", True),
    ("Double.md.md", True),  # its name key ends with `.md`
]

#: Pieces of Markdown that link, or seem to link, to the notes above in every form the parser and the plain
#: pass read (and some they do not).
FRAGMENTS = [
    "[[Mot de passe]]",
    "[[mot de passe|le code]]",
    "[[secrets/Mot de passe#Titre]]",
    "[[Mot de passe.md]]",
    "![[Mot de passe]]",
    "[[MOT DE PASSE]]",
    "[[Café crème]]",
    "[[" + unicodedata.normalize("NFD", "Café crème") + "]]",
    "[[journal]]",
    "[[public/journal]]",
    "[[perso/journal|j]]",
    "[[Plan B]]",
    "[[sous/Plan B]]",
    "[[Accueil]]",
    "[[Zeta]]",
    "[[zeta\\|z]]",
    "[[100%AB]]",
    "[[#Un titre]]",
    "[[ ]]",
    "\\[[Zeta]]",
    "[le code](../secrets/Mot%20de%20passe.md)",
    "[le code](<../secrets/Mot de passe.md>)",
    "[code](secrets/Mot%20de%20passe.md#Titre)",
    "[c](/secrets/Caf%C3%A9%20cr%C3%A8me.md)",
    "[j](journal.md)",
    "[j](./journal.md)",
    "[z](../Zeta.md)",
    "[z](..)",
    "[z](sous/)",
    "[z](../sous/)",
    "[z](../..)",
    "[[./journal]]",
    "[[../journal]]",
    "[[..]]",
    "[[Double.md]]",
    "[d](Double.md)",
    "[d](../Double.md.md)",
    "[p](100%25AB.md)",
    "[u](obsidian://open?vault=v&file=Zeta)",
    "[u](obsidian://open?vault=v&file=secrets%2FMot%20de%20passe)",
    "[w](https://example.org/Zeta)",
    '<a href="../Zeta.md">z</a>',
    "\n[ref]: ../secrets/Mot%20de%20passe.md\n",
    "[[Zeta]](../public/Accueil.md)",
    "[[Accueil]](../Zeta.md)",
    "`[[Zeta]]`",
    "`` [[Mot de passe]] ``",
    "`[z](../Zeta.md)`",
    "\n```\n[[Zeta]]\n[j](journal.md)\n```\n",
    "\n~~~\n[[Café crème]]\n~~~\n",
    "$$ [[Zeta]] $$",
    "%% [[Zeta]] %%",
    "<!-- [[Mot de passe]] -->",
    "[[Ze%% x %%ta]]",
    "[[Ze<!-- -->ta]]",
    "[z](../Ze%%c%%ta.md)",
    '<a href="../Ze%%x%%ta.md">z</a>',
    '\n```\n<a href="../Zeta.md">z</a>\n```\n',
    "\n```\n[ref]: ../Zeta.md\n```\n",
    "`a %% b` [[Zeta]] `c %% d`",
    "`",
    "``",
    "%%",
    "\n\n",
    " du texte ",
    "é",
    "#",
    "^blk-1",
    "[",
    "]]",
    "](",
]

PLAIN = "Un paragraphe de texte ordinaire, assez long pour que le texte dépasse les quelques centaines de caractères. "


def _vault(tmp_path: Path, bodies: dict[str, str]) -> Vault:
    for rel, private in NOTES:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        title = Path(rel).stem
        path.write_text((PRIVATE if private else PUBLIC).format(title=title), encoding="utf-8")
    for rel, body in bodies.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return Vault.load(tmp_path)


def _full_parse(vault: Vault, text: str, source: str) -> str:
    """What `visitor_text` computed before any shortcut: every link parsed and resolved."""
    hidden = vault.hidden_paths()
    if not hidden or "[" not in text and "<" not in text:
        return text
    return cut_links(text, lambda link: vault._link_target(link, source) in hidden)


def _texts(vault: Vault, path: str) -> list[str]:
    note = vault.notes[path]
    body = note.body
    # the body as the index and the prompt read it, the raw body, the title, and pieces of the body
    pieces = [body[i:j] for i, j in ((0, len(body) // 2), (len(body) // 3, len(body)), (5, len(body) - 5))]
    return [note.reader_body, body, note.title, note.text, *pieces]


def test_each_fragment_alone_and_in_a_long_body(tmp_path: Path) -> None:
    bodies = {}
    for i, fragment in enumerate(FRAGMENTS):
        bodies[f"public/court-{i}.md"] = f"# Court\n\nAvant {fragment} après.\n"
        # long (past any length threshold), with a link to a public note: the common case of a big vault
        bodies[f"public/long-{i}.md"] = f"---\ntitle: Long {i}\n---\n{PLAIN * 3}[[Accueil]]\n\n{fragment}\n\n{PLAIN * 2}\n"
    vault = _vault(tmp_path, bodies)
    assert len(vault.hidden_paths()) == sum(private for _rel, private in NOTES)
    checked = cut = 0
    for path in bodies:
        for text in _texts(vault, path):
            expected = _full_parse(vault, text, path)
            assert vault.visitor_text(text, path) == expected, (path, text)
            checked += 1
            cut += expected != text
    assert cut > 50 and checked - cut > 50  # both outcomes well represented


def test_math_and_comments_in_a_long_body_without_code(tmp_path: Path) -> None:
    """A body long enough and without a backtick, whose links (as the vault parsed them) reach no hidden
    note: a link written inside math, or formed when the reader's text drops a comment, is still cut."""
    bodies = {
        "public/math.md": f"{PLAIN * 4}\n\n$$ [[Zeta]] $$\n\n[[Accueil]]\n",
        "public/joined.md": f"{PLAIN * 4}\n\nVoir [[Ze%% note %%ta]].\n\n[[Accueil]]\n",
    }
    vault = _vault(tmp_path, bodies)
    for path in bodies:
        note = vault.notes[path]
        seen = vault.visitor_text(note.reader_body, path)
        assert "[[Zeta]]" not in seen and "Ze%%" not in seen, seen
        assert seen == _full_parse(vault, note.reader_body, path)
        assert "[[Accueil]]" in seen


@pytest.mark.parametrize("seed", range(6))
def test_random_bodies(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    bodies = {}
    for i in range(40):
        parts = [rng.choice(FRAGMENTS) if rng.random() < 0.6 else rng.choice((PLAIN, "\n", " ", "\n\n")) for _ in range(rng.randint(1, 14))]
        head = f"---\ntitle: Note {i}\n---\n" if rng.random() < 0.7 else ""
        folder = rng.choice(("public", "public/sous", "perso/sous", ""))
        bodies[f"{folder}/n{i}.md".lstrip("/")] = head + "".join(parts)
    vault = _vault(tmp_path, bodies)
    for path in bodies:
        for text in _texts(vault, path):
            assert vault.visitor_text(text, path) == _full_parse(vault, text, path), (path, text)


def test_a_hidden_note_text_and_other_sources(tmp_path: Path) -> None:
    """The pre-check only answers for a visible source: a hidden note's `[[#Heading]]` points at itself,
    and a text written nowhere in the vault is checked as well."""
    vault = _vault(tmp_path, {"public/a.md": "[[#Titre]] [[Zeta]]\n"})
    for source in ("Zeta.md", "perso/journal.md", "public/a.md", "ailleurs/b.md", ""):
        for text in ("[[#Titre]] et [[Accueil]]", "`[[Zeta]]`", "[[journal]]", "[x](journal.md)", "[x](../Zeta.md)"):
            assert vault.visitor_text(text, source) == _full_parse(vault, text, source), (source, text)
    assert vault.visitor_text("[[#Titre]]", "Zeta.md") == ""
