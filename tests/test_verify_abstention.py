"""The abstention reader (grasbot/answer/verify_abstention.py), one test per grammatical frame: sentences
written here (none taken from a labelled set), each frame with the negative facts of the same shape that
are claims and must stay claims. An abstention is also checked through `verify`, as the service labels it."""

from __future__ import annotations

import pytest

from grasbot.answer.verify import Passage, is_abstention, verify

NOTE = Passage(
    "atelier",
    "# Atelier\n\nMaëlle anime un atelier de poterie à Rennes depuis 2018. Le cours n'est pas donné en ligne.\n",
    "Atelier",
)


def check(abstaining: list[str], stating: list[str]) -> None:
    missed = [s for s in abstaining if not is_abstention(s)]
    taken = [s for s in stating if is_abstention(s)]
    assert (missed, taken) == ([], [])
    for sentence in abstaining:
        assert [c.label for c in verify(sentence, (NOTE,)).sentences] == ["abstention"], sentence


def test_a_negated_passive_of_reporting_speaks_of_the_sources() -> None:
    # a verb of stating or documenting, no agent, no source named: in an answer, what the notes leave out
    check(
        [
            "La date de son embauche n'est pas précisée.",
            "Le montant de la bourse n'est indiqué nulle part.",
            "Les raisons du déménagement ne sont pas détaillées.",
            "La taille de l'atelier n'a jamais été documentée.",
            "Le nom de la galerie n'est pas donné.",
            "Son tarif horaire n'est pas spécifié pour les stages.",
            "Ni le prix ni la durée ne sont mentionnés.",
            "Il n'est pas précisé combien d'élèves elle accueille.",
            "The opening hours are not specified.",
            "Her hourly rate isn't mentioned anywhere.",
            "The gallery's name has not been given.",
        ],
        [
            "Le prix du cours n'est pas fixé.",  # a verb of the world
            "Le four n'est pas chiffré.",
            "Le matériel n'est pas fourni.",
            "Le cours n'est pas donné en ligne.",  # a weak verb with a complement
            "Elle n'a pas été nommée présidente.",
            "L'émaillage n'est pas documenté comme obligatoire.",  # a predicate
            "Ce n'est pas documenté comme une méthode sûre.",
            "Le tarif n'est pas précisé par la mairie.",  # an agent that is not a source
            "Il n'est pas précisé par l'organisateur quel budget est prévu.",
            "La date n'est pas indiquée sur l'affiche.",  # a place that is not a source
            "Le procédé n'est pas documenté publiquement par le fabricant.",  # a manner
            "The kiln is not encrypted.",
            "Clay is not provided.",
            "The method is not documented as safe.",
            "If no date is specified, the class is on Saturday.",  # a condition
            "Don't mention the other students.",  # an imperative
        ],
    )


def test_the_literary_ne_alone_with_savoir_or_pouvoir() -> None:
    check(
        [
            "Je ne saurais dire quand elle a ouvert l'atelier.",
            "Je ne saurais vous le confirmer.",
            "Je ne sais si elle expose encore.",
            "Je ne puis vous répondre sur ce point.",
            "Je ne pourrais vous le garantir.",
            "Je n'oserais l'affirmer.",
        ],
        ["Je ne peux que vous conseiller son atelier.", "Elle ne sait que trop bien tourner le grès."],
    )


def test_hedges_and_uncertainty_before_an_indirect_question() -> None:
    check(
        [
            "Difficile à dire.",
            "Difficile de savoir si elle donne encore des cours.",
            "Il est difficile d'en dire plus à partir de ces fiches.",
            "Hard to tell from these notes.",
            "It is unclear whether she still teaches.",
            "Il n'est pas clair si le stage est payant.",
            "Je ne suis pas sûr qu'elle vende ses pièces.",
        ],
        [
            "Il lui est difficile de dire non.",
            "It is hard to say no to a student.",
            "He is not sure whether to move to Rennes.",
            "Il est difficile de savoir tourner sans pratique.",
        ],
    )


def test_the_speaker_as_the_one_knowledge_escapes() -> None:
    check(
        ["Cela m'échappe.", "Le nom de la galerie m'est inconnu.", "The exact figure escapes me.", "The date is unknown to me.",
         "Cette information ne m'est pas accessible."],
        ["Vos pièces ne nous sont jamais accessibles.", "Le nom de la galerie est inconnu du public.", "The cause is unknown to the vendor."],
    )


def test_the_sources_as_subject_with_any_verb_of_stating() -> None:
    # verbs of naming, quantifying, asserting, dwelling on a topic; possessive sources; silence, vagueness
    check(
        [
            "Ses fiches ne nomment pas ses élèves.",
            "Les notes ne le chiffrent pas.",
            "Ma documentation ne précise pas ses horaires.",
            "Les documents ne s'attardent pas sur sa formation.",
            "Les fiches restent vagues sur ses tarifs.",
            "Ses notes restent silencieuses sur ce point.",
            "Les notes n'en font pas état.",
            "Ses notes ne m'apprennent rien sur ses expositions.",
            "The documents I have don't specify the fee.",
            "None of the notes mention her prices.",
            "Les fiches n'en font aucune mention.",  # the light verb `faire` governs its noun of stating
            "Le dossier que j'ai ne précise pas la date.",  # what the speaker has is a source
            "Ses notes ne touchent pas à ce sujet.",  # a verb of aboutness with a source as subject
        ],
        [
            "Les notes de frais ne précisent pas le montant.",  # a compound: another thing
            "Les notes de version ne mentionnent pas ce correctif.",
            "The release notes don't mention this fix.",
            "Le contrat ne précise pas la durée de l'essai.",  # a subject that is not a source
            "Elle ne mentionne jamais ses tarifs par écrit.",
            "Rien ne protège les données des visiteurs.",  # a full verb: its object is no participle
            "La réforme ne concerne pas les ateliers.",  # aboutness of the world
        ],
    )


def test_clauses_without_a_verb() -> None:
    check(
        [
            "Pas précisé.",
            "Non renseigné.",
            "Not specified anywhere.",
            "Nulle mention de ses tarifs.",
            "Rien sur ses expositions.",
            "Sur ce point, rien.",
            "Nulle part dans les fiches il n'est question de son salaire.",
        ],
        ["Pas de cours le lundi.", "Rien à payer pour la première séance.", "Pas de four sur place."],
    )


def test_sans_and_a_partial_abstention_after_a_fact() -> None:
    check(
        [
            "Elle anime un atelier à Rennes, mais la date d'ouverture n'est pas précisée.",
            "Ses fiches évoquent une exposition, sans en préciser le lieu.",
            "Elle a exposé à Nantes, sans que les notes disent en quelle année.",
            "La question reste sans réponse dans les fiches.",
            "She teaches in Rennes, but the notes don't say since when.",
        ],
        ["Elle a fermé l'atelier sans donner de raison.", "Il est parti sans dire au revoir.", "She left without saying why."],
    )


def test_impersonal_existential_and_exceeding_frames() -> None:
    check(
        [
            "Il n'existe aucune information sur ses élèves.",
            "Il n'est question nulle part de ses tarifs.",
            "Il n'y a rien sur ce sujet dans les fiches.",
            "Il n'y a pas un mot sur ses cours.",
            "Son adresse n'est pas dans les notes.",
            "That detail isn't in my notes.",
            "Cette question dépasse ce que contiennent mes fiches.",
            "Cela sort du cadre de mes notes.",
            "That's beyond what my notes cover.",
        ],
        [
            "Il n'existe aucune version en ligne du cours.",
            "Il est hors de question de changer de four.",
            "Le budget dépasse les prévisions.",
            "Le carton n'est pas dans le coffre.",
            "The Markdown is processed outside of the HTML context.",
            "You can also sort and move them using the context menu.",
        ],
    )


def test_the_speakers_ability_is_about_knowing_only() -> None:
    check(
        [
            "Je ne suis pas capable de vous le dire.",
            "Je ne peux pas être plus précis.",
            "Je n'arrive pas à trouver sa date de naissance.",
            "I have no way of knowing.",
            "I'm not able to tell you that.",
            "I'm not in a position to say.",
            "I wouldn't be able to tell you.",
        ],
        ["Nous ne pouvons pas lire vos données.", "Nous ne sommes pas en mesure de récupérer votre mot de passe.", "Il n'y a pas de mot de passe sur le poste."],
    )


@pytest.mark.parametrize(
    "sentence",
    [
        # a condition or a clause of time asserts nothing
        "Si aucune date n'est précisée, la séance est le samedi.",
        "S'il n'est pas indiqué, le tarif plein s'applique.",
        "Le tarif plein s'applique si aucun âge n'est spécifié.",
        # an imperative or an instruction asserts nothing
        "N'indiquez pas votre numéro dans le formulaire.",
        "Ne mentionnez pas les autres élèves.",
        "Ne jamais préciser son tarif au téléphone.",
        # a knowledge noun as the subject of a verb of the world, or with an agent that is not a source
        "Aucune mention légale n'est exigée pour un atelier.",
        "Aucun détail n'a été rendu public par la mairie.",
        "No technical details were made public by the kiln maker.",
    ],
)
def test_conditions_instructions_and_verbs_of_the_world_are_not_abstentions(sentence: str) -> None:
    assert not is_abstention(sentence)
