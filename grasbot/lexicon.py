"""Query expansion: a small curated French thesaurus and FR<->EN lexicon for the questions visitors of a
personal or portfolio site (and of a software help vault) ask.

Why: a visitor asks "Peut-on l'embaucher bientôt ?" and the note says "recrutement", "poste",
"disponible"; a visitor asks in English over a French vault. BM25 only sees shared tokens, so a question
in other words than the note's finds nothing, or only a rare word of an unrelated body.

How: every entry below is a set of words, tokenized by the same tokenizer as the index (folded, stemmed),
so lookups are on tokens. Two kinds of lines in `_TABLE`:

- ``a, b, c`` — a synonym group: each member expands to every other member;
- ``a, b > x, y`` — directed: a question holding `a` (or `b`) also looks for `x` and `y`, not the reverse
  (a more specific word leads to the general one the notes use, and an English word to its French
  translations; the reverse would flood French questions).

A member of several words ("temps plein", "full time") matches when all its tokens are in the question,
and adds all its tokens. Only terms the vault holds are returned, never a token already in the question,
each with a weight < 1: an expansion ranks below an original word and the search engine counts it as
evidence only at a discount and at most once per original word (see `grasbot.grounding`).

The table is general vocabulary (hiring, job, salary, contact, skills, projects, studies, career change,
hobbies, experience, languages, availability, and the common words of note-taking software), never the
wording of a particular question set or vault.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass
from functools import lru_cache

from grasbot.tokenize import tokenize

__all__ = ["EXPANSION_WEIGHT", "Expansion", "expand", "knows", "entries"]

#: The ranking weight of an expansion, relative to an original question word (1.0).
EXPANSION_WEIGHT = 0.5

_TABLE = """
# -- hiring, job, availability ------------------------------------------------------------------------
embaucher, embauche, recruter, recrutement, engager
embaucher, embauche, recruter, recrutement, engager > poste, emploi, disponible, disponibilité, cdi
bientôt, prochainement, quand, date, immédiatement, rapidement > disponible, disponibilité
poste, emploi, travail, job, boulot
chercher, recherche, cherche, rechercher
cdi, cdd, contrat > poste, emploi, contrat
alternance, apprentissage, alternant, apprenti
stage, stagiaire, internship
télétravail, distanciel, remote
salaire, rémunération, prétentions, salarial, salariale, salariales, paie, payé, tarif, tarifs, tjm
salaire, rémunération, prétentions, salarial, salariales, tarif > conditions
freelance, indépendant, freelancing, mission, missions, prestataire, auto-entrepreneur
# -- contact ------------------------------------------------------------------------------------------
joindre, contacter, contact, coordonnées, écrire, appeler, rencontrer
téléphone, portable, numéro, mail, email, courriel, adresse, linkedin > contact, contacter, coordonnées, formulaire
# -- where he lives -----------------------------------------------------------------------------------
habiter, habite, vit, vivre, domicile, résider, réside, localisation, ville, région, basé, situé
# -- skills, experience, career -----------------------------------------------------------------------
compétence, compétences, savoir-faire, aptitudes, capacités, maîtrise, expertise, connaissances
maîtriser, maîtrise, connaître, connaît, savoir, sait > compétence, compétences
expérience, parcours, carrière, cv, curriculum, profil
emploi précédent, ancien employeur, employeur, employé, entreprise, entreprises, société, sociétés, boîte > expérience, poste
travaillé, travailler, bosser, bossé > expérience
métier, profession, travail, fonction, poste
reconversion, reconverti, changement de carrière, changer de métier, réorientation, quitter
formation, études, diplôme, diplômé, cursus, école, scolarité, université, apprendre, appris
projet, projets, réalisation, réalisations, portfolio, travaux
langue, langues, anglais, espagnol, allemand, bilingue, toeic, toefl
langage, langages, programmation, coder, code, développer
# -- spare time --------------------------------------------------------------------------------------
loisir, loisirs, passion, passions, hobby, hobbies, passe-temps, temps libre, centres d'intérêt, intérêts
aimer, aime, adore, apprécie, plaisir > loisirs, passions, intérêts
randonnée, rando, marche, trek, trekking, sentier, sentiers
application, appli, app, logiciel, outil
# -- note-taking software (help vaults) ---------------------------------------------------------------
alias, autre nom, surnom, pseudonyme, synonyme
insérer, incorporer, intégrer, embarquer, inclure
image, images, photo, photos, illustration, média, médias, pièce jointe, pièces jointes
thème, thèmes, apparence, couleur, couleurs, style, css
enregistrer, sauvegarder, sauvegarde, stocker, stockage, conserver
disque, dossier, répertoire, emplacement
coffre, vault, coffre-fort
rétrolien, rétroliens, backlink, backlinks, liens entrants, mentions
graphe, graphique, graph
encadré, callout, callouts, mise en avant, mises en avant, bloc
avertissement, alerte, warning, attention, astuce, conseil, note
métadonnées, propriétés, propriété, frontmatter, yaml
mémo, mémos, enregistrement
vocal, audio, voix, son
raccourci, raccourcis, touche, clavier
supprimer, effacer, retirer, enlever
modifier, éditer, changer, personnaliser, configurer, paramétrer, réglages, paramètres
chercher, rechercher, recherche, trouver
synchroniser, synchronisation, sync
# -- English -> French --------------------------------------------------------------------------------
hire, hiring, recruit, recruiting, employ > embaucher, recrutement, poste, emploi
available, availability > disponible, disponibilité
job, position, role, work > poste, emploi, travail
full time, full-time > temps plein, cdi
part time, part-time > temps partiel
remote > télétravail
salary, pay, wage, rate > salaire, rémunération, tarif
contact, reach, phone, call, email > contact, contacter, coordonnées, téléphone
live, lives, based, located > habite, ville, région
skill, skills, ability, abilities, expertise > compétence, compétences
know, knows > connaît, compétence, maîtrise
experience > expérience, parcours
career > carrière, parcours
career change, switch > reconversion
company, companies, employer, employers > entreprise, employeur
study, studies, education, degree, school, university, training > études, formation, diplôme, école
project, projects > projet, projets
language, languages > langue, langues, langage, langages
programming > programmation
hobby, hobbies, free time, spare time, leisure, interests > loisirs, passions, centres d'intérêt, temps libre
hiking, hike, trail, trails > randonnée, sentier, sentiers
app, application, software, tool > application, appli, logiciel, outil
website, site > site
outage, failure, incident, crash > panne, incident
happened > arrivé, passé
machine learning > apprentissage automatique
printing > impression
weather > météo
"""


@dataclass(frozen=True, slots=True)
class Expansion:
    """One expansion term: the index token, its weight, and the question token(s) that led to it."""

    term: str
    weight: float
    source: str  # the question's tokens that triggered it, space-separated (evidence is capped per source)


def _member(word: str) -> tuple[str, ...]:
    return tuple(sorted(set(tokenize(word))))


@lru_cache(maxsize=1)
def entries() -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """The table as (trigger tokens, expansion tokens) pairs, tokenized once, in table order."""
    out: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for raw in _TABLE.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if ">" in line:
            left, right = line.split(">", 1)
            triggers = [_member(w) for w in left.split(",")]
            targets = sorted({t for w in right.split(",") for t in _member(w)})
            for trig in triggers:
                if trig:
                    out.append((trig, tuple(t for t in targets if t not in trig)))
        else:
            members = [m for m in (_member(w) for w in line.split(",")) if m]
            for trig in members:
                targets = sorted({t for m in members if m != trig for t in m} - set(trig))
                out.append((trig, tuple(targets)))
    return tuple(out)


@lru_cache(maxsize=1)
def _by_token() -> dict[str, tuple[int, ...]]:
    index: dict[str, list[int]] = {}
    for i, (trig, _targets) in enumerate(entries()):
        index.setdefault(trig[0], []).append(i)
    return {k: tuple(v) for k, v in index.items()}


@lru_cache(maxsize=1)
def _known() -> frozenset[str]:
    return frozenset(t for trig, targets in entries() for t in trig + targets)


def knows(token: str) -> bool:
    """True when `token` is a word of the lexicon: the caller should not "correct" its spelling into an
    unrelated index term (`available` is not a misspelling of `avril`)."""
    return token in _known()


def expand(tokens: Iterable[str], vocabulary: Container[str], weight: float = EXPANSION_WEIGHT) -> list[Expansion]:
    """Expansion terms of a question's `tokens`, restricted to terms in `vocabulary` (the index's terms),
    never one of `tokens` itself. Sorted by term; a term reached from several sources keeps the first
    source in sorted order (deterministic)."""
    present = set(tokens)
    if not present:
        return []
    by_token = _by_token()
    table = entries()
    found: dict[str, str] = {}
    for token in sorted(present):
        for i in by_token.get(token, ()):
            trig, targets = table[i]
            if not present.issuperset(trig):
                continue
            source = " ".join(trig)
            for term in targets:
                if term not in present and term in vocabulary and term not in found:
                    found[term] = source
    return [Expansion(term, weight, found[term]) for term in sorted(found)]
