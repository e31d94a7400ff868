"""The answer verifier (grasbot/answer/verify*.py): sentences and their offsets, citations, anchors that
must match exactly, content words by stem, labels, status; on passages made here and on the bundled vault."""

from __future__ import annotations

import random

import pytest

from grasbot.answer.verify import ABSTENTION, Passage, is_abstention, note_passage, subject_names, verify
from grasbot.answer.verify_claims import claims_of
from grasbot.answer.verify_sentences import citations, split_sentences
from grasbot.answer.prompt import is_servable
from grasbot.vault import Vault
from tests.service_fixtures import SAMPLE_VAULT

RUST = Passage(
    "rust",
    "# Rust\n\n## Comment il y est venu\n\nAurèle a appris Rust en 2020, le soir, en réécrivant un petit outil qui\n"
    "prenait dix minutes en Python. La version Rust s'exécutait en vingt secondes.\n\n## Limites\n\n"
    "Il est moins à l'aise avec le code `unsafe`, qu'il n'a jamais eu besoin d'écrire en production.\n",
    "Rust",
)
COLLECTE = Passage(
    "collecte",
    "Un collecteur écrit en Rust reçoit les mesures envoyées en MQTT. Le service tourne en trois instances.\n\n"
    "- Environ 9 millions de points de mesure par jour.\n- Consommation stable autour de 40 Mo, contre 1,2 Go.\n"
    "- Délai de détection ramené de 26 heures à 12 minutes.\n\nLe broker a été redémarré à 08 h 30. "
    "Le plus difficile n'a pas été le solveur mais la donnée.",
    "Collecte de télémétrie solaire",
)


def label(answer: str, *passages: Passage) -> list[str]:
    return [s.label for s in verify(answer, passages or (RUST, COLLECTE)).sentences]


# -- sentences and citations ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("M. Quintard utilise Python 3.11, cf. la note [python, p. 28]. Il a 33 ans.", ["M. Quintard utilise Python 3.11, cf. la note [python, p. 28].", "Il a 33 ans."]),
        ("Environ 9 millions, etc. et 1,2 Go. Fin.", ["Environ 9 millions, etc. et 1,2 Go.", "Fin."]),
        ("Il a écrit en Rust. [rust] Puis en Python [python].", ["Il a écrit en Rust. [rust]", "Puis en Python [python]."]),
        ("Voir « Il a dit. Puis rien » ici ! Ensuite ?", ["Voir « Il a dit. Puis rien » ici !", "Ensuite ?"]),
        ("- Rust : tokio, serde.\n- Python 3.11\n\n## Bref\nIl code.", ["Rust : tokio, serde.", "Python 3.11", "Bref", "Il code."]),
        ("Version v1.2.3 livrée. A. Quintard l'a faite.", ["Version v1.2.3 livrée.", "A. Quintard l'a faite."]),
        ("En résumé : Il code. Un texte\ncoupé en deux lignes.", ["En résumé :", "Il code.", "Un texte\ncoupé en deux lignes."]),
    ],
)
def test_sentences_keep_abbreviations_decimals_versions_and_citations_whole(answer: str, expected: list[str]) -> None:
    sentences = split_sentences(answer)
    assert [s.text for s in sentences] == expected
    assert all(answer[s.start : s.end] == s.text for s in sentences)


def test_citations() -> None:
    assert [c for c, _, _ in citations("a [rust] b [python, p. 28] c [a, b] [[wiki]] [x](http://l) [sic ici]")] == [
        "rust", "python", "a", "b", "wiki",
    ]  # fmt: skip
    assert split_sentences("Il code [rust, python].")[0].cited == ("rust", "python")


def test_splitting_never_fails_and_offsets_always_slice(request) -> None:
    rng = random.Random(17)
    alphabet = "ab .!?…:[]()«»\"'\n-*#,;0123456789AÉé M"
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        for s in split_sentences(text):
            assert text[s.start : s.end] == s.text and s.text.strip() == s.text


# -- anchors -------------------------------------------------------------------------------------------
def test_numbers_are_normalised() -> None:
    c = claims_of("Environ 9 millions de points, 1,2 Go, une quarantaine de Mo, trois instances, 99e centile, vingt-deux ans, à 6 h 30.")
    assert {(n.value, n.unit) for n in c.numbers} >= {("9000000", ""), ("1.2", "gb"), ("40", "mb"), ("3", ""), ("99", ""), ("22", "y"), ("6:30", "time")}
    assert claims_of("Python 3.11 et v1.2.3, le 2026-05-18").months == ("mai",)


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ("Il traite environ 8 millions de points de mesure par jour [collecte].", "8"),  # one digit changed
        ("Le délai de détection est passé de 26 heures à 12 heures [collecte].", "12"),  # a unit changed
        ("Il a appris Rust en 2021 [rust].", "2021"),  # a year moved
        ("Le collecteur est écrit en Go [collecte].", "go"),  # another technology
        ("Le broker a été redémarré à 09 h 30 [collecte].", "09 h 30"),  # a time of day
        ("Il dit : « le plus difficile a été le solveur » [collecte].", "«"),  # an altered quote
        ("Le collecteur n'est pas écrit en Rust [collecte].", "negation"),  # the evidence does not deny it
    ],
)
def test_changed_anchors_are_unsupported_with_the_reason(sentence: str, why: str) -> None:
    (check,) = verify(sentence, (RUST, COLLECTE)).sentences
    assert check.label == "unsupported", check
    assert why in check.reason


def test_supported_with_evidence_and_paraphrase() -> None:
    answer = (
        "Aurèle s'est mis à Rust en 2020 en réécrivant un petit outil [rust]. "
        "Le collecteur tourne en 3 instances [collecte]. "
        "Il traite environ 9 000 000 de points par jour [collecte]."
    )
    result = verify(answer, (RUST, COLLECTE))
    assert [s.label for s in result.sentences] == ["supported"] * 3
    assert result.status == "verified" and result.faithfulness == 1.0 and result.grounded
    first = result.sentences[0]
    assert first.evidence is not None and first.evidence[0] == "rust" and "2020" in first.evidence[1]


def test_wrong_citation_names_the_note_that_says_it() -> None:
    (inside, outside) = verify(
        "Le service tourne en trois instances [rust]. Il a appris Rust en 2020 [python].", (RUST, COLLECTE)
    ).sentences
    assert inside.label == "wrong-citation" and inside.evidence[0] == "collecte" and "[rust]" in inside.reason
    assert outside.label == "wrong-citation" and outside.evidence[0] == "rust" and "not in the context" in outside.reason
    # cited right among several: supported by the cited one
    assert label("Aurèle a appris Rust en 2020 [collecte, rust].") == ["supported"]


def test_abstention_and_no_claim() -> None:
    assert label(f"{ABSTENTION} Vous pouvez lui écrire depuis /contact. Bonne question !") == ["abstention", "no-claim", "no-claim"]
    assert is_abstention("Les notes ne précisent pas son salaire.")
    assert is_abstention("Cette information n'est pas précisée dans les notes.")
    assert not is_abstention("Aucune donnée de production n'a été perdue.")
    assert not is_abstention("Il n'a jamais eu besoin d'écrire du code unsafe.")
    assert verify(ABSTENTION, (RUST,)).status == "abstained"
    assert label("Souhaitez-vous en savoir plus ?", RUST) == ["no-claim"]


# Abstentions are read by their shape (a negation joined to a frame of knowledge: the speaker lacks the
# fact, the sources do not state it, knowledge is absent), whatever the words around it.
ABSTAINING = [
    "Je n'ai pas son adresse personnelle.",
    "J'ignore s'il a déjà travaillé à l'étranger.",
    "Je ne sais pas combien de temps le projet a duré.",
    "Je ne peux pas vous dire quel était son salaire.",
    "Je ne dispose d'aucun élément sur ses loisirs.",
    "Je ne suis pas en mesure de confirmer cette date.",
    "Je n'en sais pas davantage.",
    "On ne connaît pas le nombre exact d'utilisateurs.",
    "Ses fiches restent muettes sur sa vie de famille.",
    "Rien dans le contexte n'indique qu'il parle italien.",
    "Aucune note ne précise la durée de la mission.",
    "Les documents fournis n'en disent rien.",
    "Il n'y a aucune mention de ce client.",
    "Pas de précision sur le budget.",
    "Il n'est pas indiqué s'il a obtenu le diplôme.",
    "Ce point n'est pas abordé.",
    "Cela n'apparaît nulle part dans ses notes.",
    "Cette précision est absente des extraits.",
    "Il m'est impossible de le savoir d'après ces notes.",
    "I don't know which database he chose.",
    "The notes do not say how long it took.",
    "There is no information about his hobbies.",
    "It isn't mentioned in these notes.",
    "I couldn't find his phone number.",
    "Nothing in the context indicates a salary.",
    # the missing fact as the subject, the sources named (a passive of stating, a verb of being found)
    "Le budget du projet n'est pas documenté dans ses fiches.",
    "Son adresse n'est mentionnée nulle part dans les documents.",
    "La date exacte ne figure pas dans le contexte fourni.",
    "Le chiffre n'est écrit nulle part dans ce que j'ai.",
    "The release date is not stated in the notes I have.",
    # the speaker as an indirect object
    "Le nom de son manager ne m'est pas connu.",
    "Le prix ne nous est pas connu.",
    # a relative clause holding the speaker on the subject
    "Rien dans ce que je vois ne précise la version.",
    "Les notes que j'ai sous la main ne disent rien de son salaire.",
    "Nothing in what I have says how many users there are.",
    # a clause without a verb, the sources named
    "Sur ses loisirs, rien dans les notes.",
    "Pas un mot là-dessus dans ses fiches.",
]
STATING = [
    "Il n'a pas de permis de conduire.",
    "Il ne parle pas espagnol.",
    "Il ne connaît pas le COBOL.",
    "Le service ne conserve aucune information sur les visiteurs.",
    "Aucune donnée n'a été perdue pendant la migration.",
    "N'hésitez pas à consulter ses autres fiches.",
    "Selon ses notes, le plus difficile n'a pas été le solveur.",
    "L'outil ne dispose pas d'un mode hors ligne.",
    "Les notes de frais ne sont pas remboursées.",
    "Il n'a trouvé aucun bug en production.",
    "Elle ne mentionne pas son nom sur le site.",
    "It does not include a cache.",
    "He has no driving licence.",
    "Le collecteur ne traite que les messages valides.",
    "Il ignore les messages invalides.",
    "Le chiffrement n'est pas documenté comme obligatoire dans la procédure.",
    "Le mot de passe ne m'est pas demandé au démarrage.",
    "Vos données ne nous sont jamais accessibles.",
    "Les mots-clés ne peuvent pas contenir d'espaces.",
    "Nothing in the cache is persisted.",
    "You can create links to notes that don't exist yet.",
    "Note that a commercial license does not provide any functional benefits within the app.",
    "Rien dans les journaux ne montrait d'erreur avant la panne.",
    "Pas de mot de passe dans les notes publiques.",
    "N'hésitez pas à lui écrire !",
    "The on-call engineer is not paid for the night.",
]


@pytest.mark.parametrize("sentence", ABSTAINING)
def test_abstentions_are_recognised_by_their_shape(sentence: str) -> None:
    assert is_abstention(sentence)
    assert label(sentence) == ["abstention"]


@pytest.mark.parametrize("sentence", STATING)
def test_a_negative_fact_or_an_invitation_is_not_an_abstention(sentence: str) -> None:
    assert not is_abstention(sentence)


def test_support_needs_the_passage_sentences_not_only_its_title_or_headings() -> None:
    club = Passage(
        "club",
        "Le club se retrouve le samedi au lac de Valmoreau.\n\n## Matériel\n\nLes bateaux sont prêtés par la mairie.",
        "Kayak et canoë",
    )
    # the title names kayaking, the heading equipment: neither is stated by a sentence of the note
    only_title = verify("Il fait du kayak.", (club,)).sentences[0]
    assert only_title.label == "unsupported" and "title or headings" in only_title.reason
    assert label("Il a du matériel.", club) == ["unsupported"]
    # the title may complete what a sentence states
    assert label("Il fait du kayak avec le club.", club) == ["supported"]
    assert label("Le matériel est prêté par la mairie.", club) == ["supported"]


def test_status() -> None:
    assert verify("Il a appris Rust en 2020 [rust]. Il a appris Rust en 2019 [rust].", (RUST,)).status == "partial"
    assert verify("Il a appris Rust en 2019 [rust].", (RUST,)).status == "unsupported"
    assert verify("", (RUST,)).status == "unsupported" and verify("", (RUST,)).sentences == ()
    nothing = verify("Il a appris Rust en 2020.", ())
    assert nothing.sentences[0].label == "unsupported" and not nothing.grounded


def test_json_shape() -> None:
    data = verify("Il a appris Rust en 2020 [rust]. Bonjour !", (RUST,)).as_dict()
    assert set(data) == {"status", "sentences", "summary"}
    assert set(data["sentences"][0]) == {"text", "start", "end", "label", "cited", "evidence", "reason"}
    assert data["sentences"][0]["evidence"]["id"] == "rust" and data["sentences"][1]["evidence"] is None
    assert data["summary"] == {"supported": 1, "unsupported": 0, "wrong-citation": 0, "abstention": 0, "no-claim": 1}


def test_deterministic_whatever_the_order_of_equal_evidence() -> None:
    twin = Passage("twin", RUST.text, RUST.title)
    first = verify("Il a appris Rust en 2020 [rust].", (twin, RUST))
    again = verify("Il a appris Rust en 2020 [rust].", (twin, RUST))
    assert first == again and first.sentences[0].evidence[0] == "rust"  # the cited one is preferred


@pytest.mark.skipif(not SAMPLE_VAULT.is_dir(), reason="the bundled vault/ is missing")
def test_on_the_bundled_vault_links_read_as_text_and_the_subject_is_known() -> None:
    vault = Vault.load(SAMPLE_VAULT)
    public = {n.id: n for n in vault.notes.values() if is_servable(n)}
    subjects = subject_names(public.values())
    assert "aurele" in subjects and "python" not in subjects
    passages = [note_passage(public["experience-briere-logistique"])]
    # the note names its projects as [[optimiseur-tournees]]: read as the words of the link
    result = verify("Il y a mené l'optimiseur de tournées et le portail des transporteurs [experience-briere-logistique].", passages, subjects)
    assert result.sentences[0].label == "supported"


def test_dates_written_day_first_compare_with_spelt_ones() -> None:
    panne = Passage("panne", "La panne du broker date du 14 mars 2023.", "Panne")
    assert label("La panne date du 14/03/2023 [panne].", panne) == ["supported"]
    assert label("La panne date du 14/04/2023 [panne].", panne) == ["unsupported"]


def test_an_unclosed_straight_quote_does_not_swallow_the_paragraph() -> None:
    assert [s.text for s in split_sentences('Il dit "bonjour. Puis il part.')] == ['Il dit "bonjour.', "Puis il part."]
