"""The prompt (docs/architecture.md, "The way of a question"), built from hand-made notes and hits (no retrieval involved)."""

from __future__ import annotations

from grasbot.answer.conversation import Turn
from grasbot.model import Note, Problem
from grasbot.answer.prompt import SYSTEM_PROMPT, build_prompt, hidden_names, is_servable, redact_hidden_links
from grasbot.search.index import Hit, SearchResult


def note(slug: str, body: str, *, type_: str = "projet", visibility: str | None = "public", problems: list[Problem] | None = None) -> Note:
    meta: dict[str, object] = {"title": slug.replace("-", " ").title(), "slug": slug, "type": type_}
    if visibility is not None:
        meta["visibility"] = visibility
    n = Note(path=f"notes/{slug}.md", text=body, meta=meta, body=body, body_line=5, has_frontmatter=True, problems=problems or [])
    n.id = slug
    return n


def hit(n: Note, score: float) -> Hit:
    return Hit(note=n, id=n.id, score=score, reasons=("test",))


def result(hits: list[Hit], grounded: bool = True) -> SearchResult:
    return SearchResult(query="q", tokens=("q",), hits=hits, grounded=grounded)


LONG = "\n\n".join(f"Paragraphe {i} " + "mot " * 60 for i in range(12))  # ~3,700 characters


def test_system_rules_are_all_there() -> None:
    for rule in (
        "français",
        "sans emojis",
        "[push-swap]",
        "/portfolio",
        "/competences",
        "/contact",
        "3 à 6 phrases",
        "sans rapport",
        "« parcours »",
        "N'invente jamais",
        "« non précisé dans les notes »",
        "contredisent",
        "tronquées",
    ):
        assert rule in SYSTEM_PROMPT, rule


def test_grounded_prompt_has_first_note_whole_and_weak_secondary_cut() -> None:
    first = note("collecteur", LONG)
    strong = note("voisin-fort", LONG + " FIN-FORT")
    weak = note("voisin-faible", LONG + " FIN-FAIBLE")
    prompt = build_prompt("Parle-moi du collecteur", result([hit(first, 20), hit(strong, 17), hit(weak, 5)]), keep_ratio=0.8, max_chars=1500)
    assert prompt.grounded
    assert LONG in prompt.user  # the first note, whole
    assert "FIN-FORT" in prompt.user  # 17 >= 0.8 x 20: kept whole
    assert "FIN-FAIBLE" not in prompt.user  # 5 < 0.8 x 20: cut
    assert [t.slug for t in prompt.truncated] == ["voisin-faible"]
    t = prompt.truncated[0]
    assert t.kept_chars <= 1500 < t.original_chars
    assert "Notes tronquées (extraits seulement) : [voisin-faible]." in prompt.user
    assert "note tronquée" in prompt.user
    # The cut falls on a paragraph boundary: the kept text ends a whole paragraph.
    kept = next(c.text for c in prompt.notes if c.truncated)
    assert LONG.startswith(kept) and LONG[len(kept) :].lstrip(" ").startswith("\n\n")
    assert prompt.user.rstrip().endswith("Question du visiteur : Parle-moi du collecteur")
    assert prompt.user.index("[collecteur]") < prompt.user.index("[voisin-fort]") < prompt.user.index("[voisin-faible]")


def test_ungrounded_prompt_has_no_note() -> None:
    n = note("collecteur", "Le collecteur est écrit en Rust. SECRET-DE-CORPS")
    prompt = build_prompt("Quel temps fait-il demain ?", result([hit(n, 3)], grounded=False))
    assert not prompt.grounded
    assert "SECRET-DE-CORPS" not in prompt.user
    assert "Aucune note du vault" in prompt.user
    assert "Ne donne aucun fait" in prompt.user
    assert prompt.notes == ()
    assert prompt.user.endswith("Question du visiteur : Quel temps fait-il demain ?")


def test_private_or_unreadable_notes_never_enter_the_prompt() -> None:
    public = note("public", "Texte public.")
    private = note("secret", "MARQUEUR-PRIVE", visibility="private")
    typo = note("typo", "MARQUEUR-TYPO", visibility="privte")
    yaml_error = [Problem("notes/casse.md", 2, 1, "bad yaml", "yaml-error")]
    broken = note("casse", "MARQUEUR-CASSE", visibility=None, problems=yaml_error)
    broken.text = "---\ntitle: [casse\nvisibility: private\n---\nMARQUEUR-CASSE"
    degraded = note("degradee", "Corps lisible.", visibility=None, problems=yaml_error)
    degraded.text = "---\ntitle: [casse\nvisibility: public\n---\nCorps lisible."
    plain = note("sans-frontmatter", "Texte d'une note sans frontmatter.", visibility=None, problems=[Problem("x", 1, 1, "none", "no-frontmatter")])
    binary = note("binaire", "MARQUEUR-BINAIRE", visibility=None, problems=[Problem("x", 1, 1, "binary", "binary")])
    notes = (public, private, typo, broken, degraded, plain, binary)
    assert [is_servable(n) for n in notes] == [True, False, False, False, True, True, False]
    prompt = build_prompt("q", result([hit(n, 30 - i) for i, n in enumerate(notes)]))
    assert "MARQUEUR" not in prompt.user
    assert [c.hit.id for c in prompt.notes] == ["public", "degradee", "sans-frontmatter"]
    # Only hidden notes: nothing credible is left, so the prompt is ungrounded.
    assert not build_prompt("q", result([hit(private, 30)])).grounded


def test_every_link_form_to_a_hidden_note_is_removed_before_the_cut() -> None:
    names = frozenset({"prive-salaire", "dossier (perso)"})
    text = (
        'A [x](prive-salaire.md "un titre") B [y](<Dossier (perso).md>) C [a [b] c](prive-salaire.md) '
        "D `[[prive-salaire]]` E [[ok]]"
    )
    assert redact_hidden_links(text, names) == "A  B  C  D `` E [[ok]]"
    # a second note long enough to be cut, with the link where the cut falls: removed whole, not halved
    filler = "mot " * 370
    long_body = filler + "[[prive-salaire|son salaire détaillé]] " + filler
    first, second = note("premiere", "Courte note."), note("longue", long_body)
    prompt = build_prompt("q", result([hit(first, 30), hit(second, 5)]), hidden=names)
    assert prompt.truncated and "prive" not in prompt.user and "salaire" not in prompt.user
    assert prompt.truncated[0].original_chars == len((filler + " " + filler).strip())


def test_a_link_to_a_hidden_note_in_a_title_is_removed_too() -> None:
    titled = note("bilan", "Un bilan.")
    titled.meta["title"] = "Bilan ([[prive-suivi-medical|santé]])"
    prompt = build_prompt("q", result([hit(titled, 20)]), hidden=frozenset({"prive-suivi-medical"}))
    assert "prive" not in prompt.user and "santé" not in prompt.user and "### 1. [bilan] Bilan ()" in prompt.user


def test_comments_never_enter_the_prompt() -> None:
    body = "Texte public.\n%% à moi seul : MARQUEUR-COMMENTAIRE %%\n<!-- MARQUEUR-HTML -->\n`%% du code %%`\n"
    prompt = build_prompt("q", result([hit(note("avec-commentaires", body), 20)]))
    assert "MARQUEUR" not in prompt.user
    assert "Texte public." in prompt.user and "`%% du code %%`" in prompt.user


def test_links_to_hidden_notes_are_removed() -> None:
    secret = note("prive-salaire", "x", visibility="private")
    names = hidden_names([secret, note("ok", "y")])
    assert names == frozenset({"prive-salaire"})
    text = "Voir [[prive-salaire|mes prétentions]], [[Prive-Salaire#Montant]], [[ok]] et [texte](../prive-salaire.md)."
    assert redact_hidden_links(text, names) == "Voir , , [[ok]] et ."
    body = note("public", "Contexte. Voir [[prive-salaire]] pour le reste.")
    prompt = build_prompt("q", result([hit(body, 20)]), hidden=names)
    assert "prive-salaire" not in prompt.user


def test_history_goes_before_the_question() -> None:
    n = note("collecteur", "Le collecteur est écrit en Rust.")
    history = [Turn("Qui est-il ?", "Un développeur [bio].", 0.0), Turn("Et en Rust ?", "Un collecteur [collecteur].", 1.0)]
    prompt = build_prompt("Combien de messages ?", result([hit(n, 20)]), history)
    messages = prompt.messages()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == "Qui est-il ?"
    assert messages[4]["content"] == "Un collecteur [collecteur]."
    assert messages[-1]["content"] == prompt.user
    assert prompt.size["history_chars"] == sum(t.size for t in history)


def test_note_header_names_slug_type_and_date() -> None:
    n = note("collecteur", "Corps.", type_="competence")
    n.meta["updated"] = "2026-04-23"
    prompt = build_prompt("q", result([hit(n, 20)]))
    assert "### 1. [collecteur] Collecteur (type : competence, mis à jour : 2026-04-23)" in prompt.user
