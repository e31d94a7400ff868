"""Query expansion: a small curated French thesaurus and FR<->EN lexicon for the questions visitors of a
personal or portfolio site (and of a software help vault) ask.

Why: a visitor asks "Peut-on l'embaucher bientôt ?" and the note says "recrutement", "poste",
"disponible"; a visitor asks in English over a French vault. BM25 only sees shared tokens, so a question
in other words than the note's finds nothing, or only a rare word of an unrelated body.

How: every entry below is a set of words, tokenized by the same tokenizer as the index (folded, stemmed),
so lookups are on tokens. Three kinds of lines in `_TABLE`:

- ``a, b, c`` — a synonym group: each member expands to every other member;
- ``a, b > x, y`` — directed: a question holding `a` (or `b`) also looks for `x` and `y`, not the reverse
  (a more specific word leads to the general one the notes use, and an English word to its French
  translations; the reverse would flood French questions);
- ``a = b = c`` — a word family the Snowball stemmer splits (`perdre`/`perte`, `graphe`/`graphique`,
  `afficher`/`affichage`): the same word, so it weighs more (`FAMILY_WEIGHT`).

A member of several words ("temps plein", "full time") matches when all its tokens are in the question,
and adds all its tokens. Only terms the vault holds are returned, never a token already in the question,
each with a weight < 1: an expansion ranks below an original word and the search engine counts it as
evidence only at a discount and at most once per original word (see `grasbot.search.grounding`). An expansion
carries every question word that reaches it (`Expansion.sources`): "prétentions salariales" are two words
that both mean `salaire`, and a note holding it covers both.

A line of the `English -> French` section is a translation: the same word in the vault's language, so
it ranks at `TRANSLATION_WEIGHT`, above a synonym (`EXPANSION_WEIGHT`); it still counts as evidence at a
discount, like every expansion.

Beside the table, `family`: the other forms of a question word that the vault itself holds and the
Snowball stemmer leaves on another stem (a plural `-s` after a vowel, `-ier`/`-ière`, a verb's `-age`,
`-eur`, `-ique`, `-able`): no list of words, a few look-ups of the root with each ending; ranked at
`FAMILY_WEIGHT` by the search engine.

English triggers are tokenized by the French stemmer like every question word, so an English word whose
stem is also a French word (`pay`/`pays`, `career`/`car`, `role`/`rôle`, `switch`) is left out: it
would expand French questions too.

The table is general vocabulary (hiring, job, salary, contact, skills, projects, studies, career change,
hobbies, experience, languages, availability, and the common words of note-taking software), never the
wording of a particular question set or vault.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass
from functools import lru_cache

from grasbot.search.tokenize import tokenize

__all__ = ["EXPANSION_WEIGHT", "FAMILY_ENDINGS", "FAMILY_MIN_ROOT", "FAMILY_WEIGHT", "TRANSLATION_WEIGHT", "Expansion", "entries", "expand", "family", "knows"]

#: The ranking weight of an expansion, relative to an original question word (1.0).
EXPANSION_WEIGHT = 0.5
#: The ranking weight of another member of the word's family (derivation the stemmer does not undo).
FAMILY_WEIGHT = 0.8
#: The ranking weight of a translation (the `English -> French` section): the same word in the vault's
#: language, closer than a synonym. Measured on the English titles of the help vault against the French
#: pages (benchmarks/compare_quality.py --auto): translations at 0.8 instead of 0.5, hit@1 0.682 -> 0.688,
#: MRR 0.749 -> 0.766, the question sets unchanged. French synonyms stay at 0.5: a higher weight for them
#: helped only the sample vault's own set.
TRANSLATION_WEIGHT = 0.8

_TABLE = """
# -- hiring, job, availability ------------------------------------------------------------------------
embaucher, embauche, recruter, recrutement, engager
embaucher, embauche, recruter, recrutement, engager > poste, emploi, disponible, disponibilité, cdi, alternance, stage, contrat
bientôt, prochainement, immédiatement > disponible, disponibilité
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
joindre, contacter, contact, coordonnées, appeler
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
domotique, maison connectée, maison intelligente, objets connectés, objet connecté
application, appli, app, logiciel, outil
# -- note-taking software (help vaults) ---------------------------------------------------------------
alias, surnom, pseudonyme, appellation
insérer, incorporer, intégrer, embarquer, inclure
image, images, photo, photos, illustration, média, médias, pièce jointe, pièces jointes
thème, thèmes, apparence, couleur, couleurs, style, css
enregistrer, sauvegarder, sauvegarde, stocker, stockage, conserver
disque, dossier, répertoire, emplacement
coffre, vault, coffre-fort
rétrolien, rétroliens, backlink, backlinks, liens entrants, mentions
graphe, graphique, graph
encadré, callout, callouts, mise en avant, mises en avant, bloc
avertissement, alerte, warning, attention, astuce, conseil
métadonnées, propriétés, propriété, frontmatter, yaml
mémo, mémos, enregistrement
vocal, audio, voix, son
raccourci, raccourcis, touche, clavier
supprimer, effacer, retirer, enlever
modifier, éditer, changer, personnaliser, configurer, paramétrer, réglages, paramètres
chercher, rechercher, recherche, trouver
synchroniser, synchronisation, sync
aléatoire, hasard
favori, favoris, signet, signets, marque-page, marque-pages
# -- word families the stemmer splits (verb / noun / agent) ---------------------------------------------
perdre = perte = perdu
graphe = graphique
enregistrer = enregistrement = enregistreur
afficher = affichage
insérer = insertion
supprimer = suppression
créer = création = créateur
lier = lien = liens = liaison
modifier = modification
renommer = renommage
ouvrir = ouverture
fermer = fermeture
développer = développement = développeur
programmer = programmation = programmeur
concevoir = conception
étudier = études = étudiant
apprendre = apprentissage = appris
travailler = travail
employer = emploi = employeur = employé
gérer = gestion
traduire = traduction
écrire = écriture
lire = lecture
jouer = jeu = joueur
peindre = peinture
photographier = photographie = photographe = photo
nager = natation
randonner = randonnée = randonneur
naître = naissance
joindre = jointe
connecter = connexion
sécuriser = sécurité
souscrire = souscription
# -- English -> French --------------------------------------------------------------------------------
hire, hiring, recruit, recruiting > embaucher, recrutement, poste, emploi, alternance, stage, contrat, disponible
available, availability > disponible, disponibilité
job, jobs, work > poste, emploi, travail, métier
nurse > infirmier, infirmière
teacher > enseignant, professeur
engineer > ingénieur
developer > développeur
internship, apprenticeship, work-study > stage, alternance
full time, full-time > temps plein, cdi
part time, part-time > temps partiel
remote > télétravail
salary, wage, wages, paid > salaire, rémunération, tarif
contact, reach, phone, call, email > contact, contacter, coordonnées, téléphone
live, lives, based, located > habite, ville, région
skill, skills, ability, abilities, expertise > compétence, compétences
know, knows > connaît, compétence, maîtrise
experience > expérience, parcours
career change, career switch, retraining > reconversion
company, companies > entreprise, employeur
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
# software words (help vaults)
create, creating, new > créer, nouveau, nouvelle
delete, remove, erase > supprimer, effacer
rename > renommer
edit, modify, customize > modifier, éditer, personnaliser
open > ouvrir
save, store > enregistrer, sauvegarder, stocker
backup, backups > sauvegarde, sauvegarder
restore, recover > restaurer, récupérer
search, find > rechercher, recherche, chercher, trouver
link, links > lien, liens, lier
backlink, backlinks > rétroliens
tag, tags > tags, étiquettes, mots-clés
folder, folders, directory > dossier, répertoire
picture, pictures, image, images > image, images
template, templates > modèle, modèles
plugin, plugins, extension > module, modules, extension
theme, themes > thème, thèmes, apparence
settings, preferences, options > paramètres, réglages, options
shortcut, shortcuts, hotkey, hotkeys, keyboard > raccourci, raccourcis, clavier
publish, share > publier, partager
vault, vaults > coffre, coffres
graph > graphe, graphique
daily > quotidien, quotidienne, quotidiennes
mobile, phone, smartphone > mobile, téléphone
printing > impression
view, views > vue, vues, afficher, affichage
tab, tabs > onglet, onglets
sidebar, side panel > barre latérale
bookmark, bookmarks, favorite, favorites > signet, signets, favori, favoris
outline, heading, headings > plan, titre, titres, section
properties, property, metadata > propriétés, propriété, métadonnées
attachment, attachments > pièce jointe, pièces jointes
embed, embeds, embedding > incorporer, intégrer
appearance, colour, colours, font, fonts > apparence, thème, couleur, police
workspace, workspaces, layout > espace de travail, espaces de travail, disposition
whiteboard, board > canvas, tableau blanc
word count, character count > nombre de mots, caractères
random > aléatoire, hasard
highlight, highlights, highlighter > surligner, surlignage, surligneur
footnote, footnotes > note de bas de page, notes de bas de page
formatting > mise en forme, syntaxe
bold > gras
italic, italics > italique
history, snapshot, snapshots > historique, versions, instantané
encryption, encrypted, encrypt > chiffrement, chiffré
security > sécurité
privacy > confidentialité
price, prices, pricing, cost, costs > prix, tarif, forfait, coûte
storage > stockage
refund, refunds > remboursement, rembourser
license, licenses > licence, licences
discount, student, students > réduction, étudiant, éducation
troubleshoot, troubleshooting, error, errors, bug, bugs > dépannage, problème, problèmes, erreur, résoudre
update, upgrade > mettre à jour, mise à jour, mettre à niveau
download > télécharger, téléchargement
collaborate, collaborators, shared > collaborer, partagé, partager
merge > fusionner
split > diviser, scinder
early access > accès anticipé
sandbox > coffre de test, démonstration
team, teams > équipe, équipes
analytics, statistics, visitors > analytiques, statistiques, visiteurs
filters > filtres
reader, reading > lecteur, lecture
editing > édition, modifier
preview, hover > aperçu, survoler
ribbon > ruban
folding, collapse > plier, replier
recovery > récupération
community > communauté
gift > offrir
status bar > barre d'état
command palette > palette de commandes
quick switcher > sélecteur rapide
drag and drop, drag > glisser-déposer, glisser
smart home, home automation, connected devices > domotique, maison connectée, objets connectés
"""


@dataclass(frozen=True, slots=True)
class Expansion:
    """One expansion term: the index token, its weight, and the question token(s) that led to it."""

    term: str
    weight: float
    source: str  # the question's tokens that triggered it, space-separated (evidence is capped per source)
    #: every trigger that reaches the term, `source` first: two words of the question that mean the same
    #: ("prétentions salariales") are both covered by the note that holds it.
    sources: tuple[str, ...] = ()


def _member(word: str) -> tuple[str, ...]:
    return tuple(sorted(set(tokenize(word))))


@lru_cache(maxsize=1)
def entries() -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """The table as (trigger tokens, expansion tokens) pairs, tokenized once, in table order."""
    return tuple((trig, targets) for trig, targets, _kind in _entries())


_SYNONYM, _FAMILY, _TRANSLATION = "synonym", "family", "translation"


@lru_cache(maxsize=1)
def _entries() -> tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...]:
    """(trigger tokens, expansion tokens, kind) in table order; kind is `_FAMILY` for `=` lines,
    `_TRANSLATION` for the lines of the `English -> French` section, else `_SYNONYM`."""
    out: list[tuple[tuple[str, ...], tuple[str, ...], str]] = []
    translating = False
    for raw in _TABLE.splitlines():
        if raw.startswith("# --"):
            translating = "English -> French" in raw
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" in line:
            members = [m for m in (_member(w) for w in line.split("=")) if m]
            for trig in members:
                targets = sorted({t for m in members if m != trig for t in m} - set(trig))
                if targets:
                    out.append((trig, tuple(targets), _FAMILY))
        elif ">" in line:
            left, right = line.split(">", 1)
            triggers = [_member(w) for w in left.split(",")]
            targets = sorted({t for w in right.split(",") for t in _member(w)})
            for trig in triggers:
                if trig:
                    out.append((trig, tuple(t for t in targets if t not in trig), _TRANSLATION if translating else _SYNONYM))
        else:
            members = [m for m in (_member(w) for w in line.split(",")) if m]
            for trig in members:
                targets = sorted({t for m in members if m != trig for t in m} - set(trig))
                out.append((trig, tuple(targets), _SYNONYM))
    return tuple(out)


@lru_cache(maxsize=1)
def _by_token() -> dict[str, tuple[int, ...]]:
    index: dict[str, list[int]] = {}
    for i, (trig, _targets, _family) in enumerate(_entries()):
        index.setdefault(trig[0], []).append(i)
    return {k: tuple(v) for k, v in index.items()}


@lru_cache(maxsize=1)
def _known() -> frozenset[str]:
    return frozenset(t for trig, targets, _family in _entries() for t in trig + targets)


def knows(token: str) -> bool:
    """True when `token` is a word of the lexicon: the caller should not "correct" its spelling into an
    unrelated index term (`available` is not a misspelling of `avril`)."""
    return token in _known()


def expand(
    tokens: Iterable[str],
    vocabulary: Container[str],
    weight: float | None = None,
    keep: Container[str] = frozenset(),
    family_weight: float | None = None,
    translation_weight: float | None = None,
) -> list[Expansion]:
    """Expansion terms of a question's `tokens`, restricted to terms in `vocabulary` (the index's terms),
    never one of `tokens` itself. Tokens in `keep` are not expanded (the caller passes the words the vault
    already uses widely: they match the notes as they are, and their synonyms would only add noise), unless
    they are part of a trigger of several words. Sorted by term; a term reached from several sources keeps
    the highest weight, then the first source in sorted order (deterministic) as `source`, and all of
    them, sorted, in `sources`."""
    present = set(tokens)
    by_token = _by_token()
    triggering = present & by_token.keys()  # most questions: none of their words is in the table
    if not triggering:
        return []
    weight = EXPANSION_WEIGHT if weight is None else weight
    family_weight = FAMILY_WEIGHT if family_weight is None else family_weight
    translation_weight = TRANSLATION_WEIGHT if translation_weight is None else translation_weight
    weights = {_SYNONYM: weight, _FAMILY: family_weight, _TRANSLATION: translation_weight}
    table = _entries()
    found: dict[str, tuple[float, str]] = {}
    reached: dict[str, set[str]] = {}
    for token in sorted(triggering):
        for i in by_token.get(token, ()):
            trig, targets, kind = table[i]
            # A trigger of several words ("pièce jointe") is specific even when each word is common.
            if not present.issuperset(trig) or (len(trig) == 1 and trig[0] in keep):
                continue
            source = " ".join(trig)
            w = weights[kind]
            for term in targets:
                if term not in present and term in vocabulary:
                    reached.setdefault(term, set()).add(source)
                    if term not in found or w > found[term][0]:
                        found[term] = (w, source)
    out = []
    for term in sorted(found):
        w, source = found[term]
        out.append(Expansion(term, w, source, (source, *sorted(reached[term] - {source}))))
    return out


# -- word families the stemmer leaves apart ------------------------------------------------------------
#: Endings French Snowball leaves on a stem where another form of the same word loses them: the plural
#: `-s` after a vowel (`video` / `videos`, `menu` / `menus`), the `-ier` / `-ière` adjectives (`financier`
#: stems to `financi`, `financière` to `financier`, `finance` and `financement` to `financ`), the nouns
#: and adjectives a verb forms (`affich` / `affichag` / `afficheur`, `graph` / `graphiqu`, `cliqu` /
#: `cliquabl`). Measured on every question set of benchmarks/compare_quality.py (benchmarks/README.md,
#: "Fourth round"): `-er`, `-at` and `-u` each lose a question (`derni`/`dernier`, `form`/`format`), and
#: `-ur`, `-it`, `-el`, `-uel`, `-nel`, `-ent`, `-on`, `-ion`, `-is` gain none: left out.
FAMILY_ENDINGS: tuple[str, ...] = ("s", "i", "ier", "ag", "eur", "iqu", "abl")
#: The shortest root a family is built on: `port` / `portion`, `vers` / `version`, `comm` / `comment` are
#: other words; five letters keep them apart. Measured: four trades two hit@1 (`derni` / `dernier` among
#: them) for one hit@1 and two hit@5 elsewhere; six gains nothing more than five.
FAMILY_MIN_ROOT = 5


def family(token: str, vocabulary: Container[str]) -> list[str]:
    """The other forms of the question token `token` that `vocabulary` (the index's terms) holds, sorted:
    its root (`token` less one of `FAMILY_ENDINGS`, at least `FAMILY_MIN_ROOT` letters) and the root with
    each ending. A few dictionary look-ups a word, no table: the vault's own words are the family."""
    roots = [token[: len(token) - len(e)] for e in FAMILY_ENDINGS if token.endswith(e) and len(token) - len(e) >= FAMILY_MIN_ROOT]
    if len(token) >= FAMILY_MIN_ROOT:
        roots.append(token)
    found = {root + e for root in roots for e in ("", *FAMILY_ENDINGS)}
    found.discard(token)
    return sorted(t for t in found if t in vocabulary)
