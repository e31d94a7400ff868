"""A seeded generator of synthetic GrasBot-style Obsidian vaults, for benchmarks and scale tests.

    python benchmarks/synth.py --notes 10000 --seed 42 --out /tmp/synth-10k

The same `(notes, seed)` always gives byte-identical files: every random choice comes from one
`random.Random(seed)` consumed in a fixed order, and nothing depends on set order, hash seed, the clock or
the file system. What a vault holds (see `_Plan` and `_body`):

- the GrasBot top folders (00-MOC, 10-Projets, 20-Competences, 30-Parcours, 50-Technique) with two to
  three levels of sub-folders, a few of them with spaces and accents in their names;
- frontmatter like the GrasBot notes (title, slug = file stem, type, source, domains, tags, aliases,
  answers, priority, linked, related as "[[slug]]", updated, visibility with ~2 % private, an unknown
  field now and then) and a few deliberate rule breaks for lint to find;
- ~300-word French bodies built from fixed word lists and sentence templates, with `##` headings, some
  `^block-ids`, 5-10 links of every form of docs/links.md (~2 % of them broken, some of those naming another
  note's alias), a table with an escaped pipe, and links inside code that are not links;
- attachments (png, svg, pdf) in `_attachments/` folders, embedded with `![[name.png]]`;
- `TAXONOMIE.md` and `README.md` at the root in the GrasBot format (documents, not notes);
- `.obsidian/synth-manifest.json`: what was generated (counts of links by form, broken links expected),
  so a benchmark can check that the engine it times resolves what it should.

`ensure_vault(notes, seed)` generates into `benchmarks/_data/synth-<notes>-<seed>/` once and reuses it.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import shutil
import sys
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

#: Bump when the output for a given (notes, seed) changes, so cached vaults are regenerated.
GENERATOR_VERSION = 1

DATA_DIR = Path(__file__).resolve().parent / "_data"
MANIFEST = ".obsidian/synth-manifest.json"

# --------------------------------------------------------------------------------------------------
# Vocabulary (fixed: the output must not depend on anything outside this file)
# --------------------------------------------------------------------------------------------------

#: slug, label, description: the controlled `domains` list written to TAXONOMIE.md.
DOMAINS: tuple[tuple[str, str, str], ...] = (
    ("algorithmique", "Algorithmique", "Structures de données, tri, complexité"),
    ("c", "Langage C", "Programmation système en C, bibliothèques maison"),
    ("cpp", "C++", "POO, templates, STL"),
    ("systeme", "Systèmes", "Unix, processus, threads, mutex, IPC"),
    ("reseau", "Réseaux", "TCP/IP, sockets, routage, protocoles"),
    ("web", "Web", "Frameworks, API, rendu côté serveur"),
    ("devops", "DevOps", "Conteneurs, déploiement, intégration continue"),
    ("securite", "Sécurité", "Durcissement, chiffrement, audit"),
    ("ia", "Intelligence artificielle", "Modèles de langage, agents, recherche documentaire"),
    ("graphique", "Graphique", "Rendu 2D/3D, shaders, raycasting"),
    ("donnees", "Données", "Bases de données, pipelines, visualisation"),
    ("domotique", "Domotique", "Capteurs, automatisation, objets connectés"),
    ("embarque", "Embarqué", "Microcontrôleurs, temps réel, électronique"),
    ("ecole-42", "École 42", "Projets et formation de l'école 42"),
    ("parcours", "Parcours", "CV, bio, reconversion, trajectoire"),
    ("gestion", "Gestion de projet", "Organisation, méthodes agiles, documentation"),
)

#: tag, usage: the known `tags` list written to TAXONOMIE.md.
TAGS: tuple[tuple[str, str], ...] = (
    ("moc", "Note qui est un Map of Content"),
    ("cv", "Note liée au CV personnel"),
    ("parcours", "Bio, reconversion, trajectoire"),
    ("alternance", "Recherche d'alternance / stage"),
    ("reconversion", "Changement de carrière"),
    ("42-commun", "Projets du tronc commun 42"),
    ("42-piscine", "Projets de la piscine 42"),
    ("tri", "Algorithmes de tri"),
    ("concurrence", "Threads, mutex, synchronisation"),
    ("docker", "Conteneurisation"),
    ("makefile", "Build system GNU Make"),
    ("api", "Conception et usage d'API"),
    ("tests", "Tests automatisés"),
    ("performance", "Mesure et optimisation"),
    ("documentation", "Notes de documentation interne"),
    ("prototype", "Travail exploratoire"),
    ("production", "Déployé et utilisé"),
    ("archive", "Projet terminé, gardé pour mémoire"),
    ("llm", "Modèles de langage"),
    ("linux", "Administration Linux"),
    ("python", "Écrit en Python"),
    ("rust", "Écrit en Rust"),
    ("typescript", "Écrit en TypeScript"),
    ("capteurs", "Mesures physiques"),
)

#: (top folder, note type, share of the notes, sources to pick from)
TOP_FOLDERS: tuple[tuple[str, str, float, tuple[str, ...]], ...] = (
    ("00-MOC", "moc", 0.02, ("vault/generated",)),
    ("10-Projets", "projet", 0.40, ("strapi/projects", "strapi/projects", "manual")),
    ("20-Competences", "competence", 0.25, ("strapi/competences", "manual")),
    ("30-Parcours", "parcours", 0.08, ("manual", "pdf/cv")),
    ("50-Technique", "technique", 0.25, ("manual", "manual", "vault/generated")),
)

#: Words for titles, slugs, folder names and aliases (accents on purpose: NFC and slugs get exercised).
TOPICS: tuple[str, ...] = (
    "algorithme", "analyse", "annuaire", "antenne", "api", "application", "archive", "arbre", "audit",
    "authentification", "automate", "backend", "balise", "base", "bibliothèque", "binaire", "bloc",
    "boucle", "bus", "cache", "calcul", "capteur", "carte", "certificat", "chaîne", "chiffrement",
    "client", "cluster", "code", "collecte", "compilateur", "composant", "compression", "configuration",
    "conteneur", "contrôleur", "courbe", "daemon", "débogage", "déploiement", "dépôt", "diagramme",
    "disque", "document", "domaine", "donnée", "driver", "éditeur", "élément", "émulateur", "énergie",
    "entrée", "environnement", "espace", "évènement", "exécution", "export", "extension", "fichier",
    "file", "filtre", "firmware", "flux", "fonction", "format", "formulaire", "framework", "frontend",
    "gestion", "graphe", "grille", "hachage", "hébergement", "historique", "horloge", "image", "import",
    "index", "infrastructure", "instance", "interface", "interpréteur", "journal", "lecteur", "lexique",
    "liaison", "limite", "liste", "logiciel", "machine", "maillage", "matrice", "mémoire", "message",
    "méthode", "métrique", "migration", "modèle", "module", "moniteur", "moteur", "mutex", "navigateur",
    "nœud", "noyau", "objet", "opération", "optimisation", "paquet", "paramètre", "parseur", "partage",
    "passerelle", "pile", "pilote", "pipeline", "plugin", "pointeur", "politique", "port", "processus",
    "profil", "programme", "projet", "protocole", "prototype", "proxy", "recherche", "registre",
    "requête", "réseau", "ressource", "routage", "routeur", "sauvegarde", "schéma", "script", "sécurité",
    "segment", "serveur", "service", "session", "signal", "simulation", "socket", "sonde", "source",
    "stockage", "structure", "supervision", "synchronisation", "système", "table", "tâche", "terminal",
    "test", "texture", "thread", "tableau", "traitement", "transaction", "transfert", "tri", "tunnel",
    "unité", "utilisateur", "validation", "variable", "vecteur", "version", "vue", "widget", "zone",
)

QUALIFIERS: tuple[str, ...] = (
    "avancé", "asynchrone", "autonome", "central", "distribué", "dynamique", "embarqué", "externe",
    "générique", "graphique", "hybride", "interne", "léger", "local", "modulaire", "natif", "ouvert",
    "partagé", "persistant", "principal", "rapide", "réactif", "robuste", "sécurisé", "simple", "statique",
    "temporaire", "unifié", "virtuel", "visuel",
)

NOUN_PHRASES: tuple[str, ...] = (
    "le serveur", "la mémoire", "l'algorithme", "le réseau", "la base de données", "le module", "la pile",
    "le processus", "la requête", "le protocole", "l'interface", "le compilateur", "la fonction",
    "le conteneur", "le script", "la configuration", "le noyau", "la file d'attente", "le thread",
    "le moteur de rendu", "la structure", "le parseur", "l'index", "le cache", "la session", "le client",
    "le pipeline", "la sauvegarde", "le journal", "l'utilisateur", "le capteur", "la passerelle",
    "le tableau", "la bibliothèque", "le projet", "l'équipe", "la documentation", "le test", "le modèle",
    "la méthode", "le flux", "le fichier", "la version", "le déploiement", "la machine virtuelle",
    "le routeur", "la tâche", "le programme", "l'application", "la solution", "le code source",
    "l'architecture", "le prototype", "la contrainte", "le résultat", "la mesure", "l'outil",
)

VERBS: tuple[str, ...] = (
    "gère", "transforme", "analyse", "contrôle", "optimise", "partage", "vérifie", "déclenche", "stocke",
    "compile", "charge", "synchronise", "protège", "expose", "remplace", "simplifie", "mesure", "trie",
    "indexe", "documente", "relie", "découpe", "valide", "réduit", "accélère", "surveille", "lit",
    "écrit", "construit", "organise", "traduit", "distribue", "filtre", "alimente", "isole", "reçoit",
)

ADJECTIVES: tuple[str, ...] = (
    "rapide", "robuste", "simple", "lisible", "efficace", "fiable", "modulaire", "complet", "minimal",
    "stable", "portable", "sécurisé", "cohérent", "précis", "compact", "léger", "clair", "souple",
    "performant", "documenté", "testé", "maintenable", "évolutif", "original", "indispensable",
)

ADVERBS: tuple[str, ...] = (
    "rapidement", "souvent", "toujours", "rarement", "simplement", "directement", "progressivement",
    "automatiquement", "précisément", "correctement", "entièrement", "proprement", "clairement",
)

CONNECTORS: tuple[str, ...] = (
    "Ensuite,", "Par ailleurs,", "En pratique,", "Au départ,", "Pour finir,", "Dans ce projet,",
    "De plus,", "En revanche,", "Concrètement,", "Au quotidien,", "Avec le recul,", "À terme,",
)

#: Sentence templates; `{t}` is replaced by the note's own subject, so each note has its own terms.
TEMPLATES: tuple[str, ...] = (
    "{N} {v} {n} de façon {a}.",
    "{C} {n} {v} {adv} {n2}.",
    "{N} reste {a} quand {n} {v} {n2}.",
    "Ce travail sur {t} montre que {n} {v} {n2} sans effort.",
    "{C} l'objectif était de rendre {n} plus {a}.",
    "On voit ici comment {n} {v} {n2} et pourquoi le résultat est {a}.",
    "{N} {v} {adv} {n2}, ce qui rend {t} plus {a}.",
    "Le choix de {t} impose que {n} soit {a} et {a2}.",
    "{C} {t} {v} {n} avant que {n2} ne {v2} {n3}.",
    "Il faut que {n} {v2} {n2} pour que l'ensemble reste {a}.",
    "{N} ne {v} jamais {n2} sans vérifier {n3}.",
    "La partie consacrée à {t} décrit comment {n} {v} {n2}.",
    "{C} chaque étape {v} {n} et {v2} {n2} {adv}.",
    "Un point clé : {n} {v} {n2} tandis que {n3} reste {a}.",
)

LINK_SENTENCES: tuple[str, ...] = (
    "Voir aussi {L}.",
    "Ce point rejoint {L}.",
    "Pour le détail, se reporter à {L}.",
    "Le lien avec {L} est direct.",
    "{C} on retrouve la même idée dans {L}.",
    "La démarche suit celle de {L}.",
)

HEADINGS: tuple[str, ...] = (
    "Description", "Détails du projet", "Objectifs", "Contexte", "Architecture", "Mise en œuvre",
    "Difficultés rencontrées", "Résultats", "Compétences mobilisées", "Outils utilisés", "Perspectives",
    "Notes techniques", "Étapes clés", "Tests et validation", "Performances", "Sécurité",
    "Déploiement", "Retour d'expérience", "Références", "Glossaire", "Historique", "Organisation",
)

QUESTION_TEMPLATES: tuple[str, ...] = (
    "Parle-moi de {t}",
    "Qu'est-ce que {t} ?",
    "Comment fonctionne {t} ?",
    "Quelles compétences a-t-il en {t} ?",
    "A-t-il déjà travaillé sur {t} ?",
    "Pourquoi avoir choisi {t} ?",
    "Quels outils pour {t} ?",
    "Que retenir de {t} ?",
)

ATTACHMENT_KINDS: tuple[tuple[str, bytes], ...] = (
    ("png", b"\x89PNG\r\n\x1a\n"),
    ("png", b"\x89PNG\r\n\x1a\n"),
    ("svg", b'<svg xmlns="http://www.w3.org/2000/svg">'),
    ("pdf", b"%PDF-1.4\n"),
)


@functools.lru_cache(maxsize=None)
def _fold(text: str) -> str:
    """ASCII slug of a French phrase: 'Mémoire partagée' -> 'memoire-partagee'."""
    decomposed = unicodedata.normalize("NFKD", text.replace("œ", "oe").replace("Œ", "Oe"))
    ascii_text = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    out = "".join(c if c.isalnum() else "-" for c in ascii_text)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


_PLAIN = re.compile(r"[^\W\d][\w '.-]*")


def _yaml_str(text: str) -> str:
    """A YAML scalar for `text`: plain when that is safe, else double-quoted (answers always end in '?')."""
    if _PLAIN.fullmatch(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --------------------------------------------------------------------------------------------------
# The plan: every note's name, folder, headings and block ids, decided before any body is written
# (links need to know their targets' headings and block ids).
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Note:
    index: int
    folder: str  # vault-relative, POSIX, "" never (notes always sit in a top folder)
    stem: str  # file name without .md (== slug), as written on disk
    link_name: str  # how other notes write it (NFC; differs from stem for the NFD-named files)
    title: str
    subject: str  # words injected into this note's sentences
    type: str
    source: str
    domains: list[str]
    tags: list[str]
    aliases: list[str]
    headings: list[str]
    block_ids: list[str]
    private: bool
    priority: int
    updated: str
    mocs: list[int] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.stem}.md"


@dataclass(slots=True)
class _Plan:
    notes: list[_Note]
    attachments: list[str]  # vault-relative paths
    by_type: dict[str, list[int]]
    folders: list[str]


def _folder_tree(rng: random.Random, notes: int) -> dict[str, list[str]]:
    """Sub-folders of each top folder, 1 to 3 levels deep; wider for bigger vaults."""
    width = 3 if notes < 2000 else 5 if notes < 20000 else 7
    tree: dict[str, list[str]] = {}
    for top, note_type, _share, _sources in TOP_FOLDERS:
        folders = [top]
        if note_type == "moc":
            tree[top] = folders
            continue
        level1 = rng.sample(TOPICS, width)
        for a in sorted(level1):
            name_a = a if rng.random() < 0.85 else f"{a.capitalize()} {rng.choice(QUALIFIERS)}"
            path_a = f"{top}/{name_a}"
            folders.append(path_a)
            for b in sorted(rng.sample(TOPICS, rng.randint(2, 4))):
                path_b = f"{path_a}/{b}"
                folders.append(path_b)
                if rng.random() < 0.5:
                    for c in sorted(rng.sample(QUALIFIERS, rng.randint(1, 3))):
                        folders.append(f"{path_b}/{c}")
        tree[top] = folders
    return tree


def _plan(rng: random.Random, count: int) -> _Plan:
    tree = _folder_tree(rng, count)
    # How many notes of each type: shares rounded, remainder to projects; at least one MOC.
    counts = [max(1, int(count * share)) for _top, _t, share, _s in TOP_FOLDERS]
    counts[1] += count - sum(counts)
    if counts[1] < 0:  # tiny vaults: take from the largest types
        counts = [1] + [0] * 4
        for i in range(count - 1):
            counts[1 + i % 4] += 1

    taken: set[str] = set()  # lower-cased stems: unique file names, case-insensitively
    notes: list[_Note] = []
    domain_slugs = [d[0] for d in DOMAINS]
    tag_names = [t[0] for t in TAGS]
    for (top, note_type, _share, sources), n in zip(TOP_FOLDERS, counts):
        folders = tree[top]
        for _ in range(n):
            index = len(notes)
            while True:
                words = rng.sample(TOPICS, rng.choice((2, 2, 3)))
                if rng.random() < 0.3:
                    words.append(rng.choice(QUALIFIERS))
                title = " ".join(words).capitalize()
                spaced = rng.random() < 0.08  # "Mémoire partagée.md": markdown links need %20
                stem = title if spaced else _fold(title)
                if note_type == "moc":
                    stem = "MOC-" + "-".join(w.capitalize() for w in _fold(title).split("-"))
                if stem.lower() not in taken:
                    break
            taken.add(stem.lower())
            link_name = stem
            if spaced and rng.random() < 0.1 and unicodedata.normalize("NFD", stem) != stem:
                stem = unicodedata.normalize("NFD", stem)  # as macOS writes it; links stay NFC
            folder = folders[0] if len(folders) == 1 or rng.random() < 0.1 else rng.choice(folders[1:])
            n_domains = rng.randint(1, 4)
            domains = rng.sample(domain_slugs, n_domains)
            tags = rng.sample(tag_names, rng.randint(1, 4))
            if note_type == "moc":
                tags = ["moc"] + [t for t in tags if t != "moc"][:1]
            subject = " ".join(words[:2])
            aliases = [subject, _fold(title).replace("-", " "), _fold(title).replace("-", "_")]
            for _a in range(rng.randint(0, 6)):
                aliases.append(f"{rng.choice(TOPICS)} {rng.choice(QUALIFIERS)}")
            aliases = list(dict.fromkeys(aliases))
            headings = rng.sample(HEADINGS, rng.randint(3, 5))
            block_ids = [f"blk-{rng.randrange(16**6):06x}" for _b in range(rng.choice((0, 0, 1, 2)))]
            notes.append(
                _Note(
                    index=index,
                    folder=folder,
                    stem=stem,
                    link_name=link_name,
                    title=title,
                    subject=subject,
                    type=note_type,
                    source=rng.choice(sources),
                    domains=domains,
                    tags=tags,
                    aliases=aliases,
                    headings=headings,
                    block_ids=block_ids,
                    private=rng.random() < 0.02,
                    priority=9 if note_type == "moc" else rng.choice((3, 4, 5, 5, 5, 6, 7, 8)),
                    updated=f"20{rng.randint(24, 26)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                )
            )
    by_type: dict[str, list[int]] = {}
    for note in notes:
        by_type.setdefault(note.type, []).append(note.index)
    mocs = by_type.get("moc", [])
    for note in notes:
        if mocs and note.type != "moc":
            note.mocs = sorted(set(rng.sample(mocs, min(len(mocs), rng.randint(1, 2)))))

    # Attachments: one for every ~8 notes, in `_attachments/` folders beside the notes.
    attachments: list[str] = []
    used_names: set[str] = set()
    all_folders = sorted({n.folder for n in notes})
    for i in range(max(2, count // 8)):
        ext, _magic = rng.choice(ATTACHMENT_KINDS)
        name = f"{rng.choice(('schema', 'capture', 'diagramme', 'photo', 'rapport'))}-{_fold(rng.choice(TOPICS))}-{i:05d}.{ext}"
        if name in used_names:
            continue
        used_names.add(name)
        place = "_attachments" if rng.random() < 0.6 else f"{rng.choice(all_folders)}/_attachments"
        attachments.append(f"{place}/{name}")
    return _Plan(notes=notes, attachments=attachments, by_type=by_type, folders=all_folders)


# --------------------------------------------------------------------------------------------------
# Bodies
# --------------------------------------------------------------------------------------------------


def _sentence_pool(rng: random.Random, size: int) -> list[str]:
    """Sentences made once per vault; notes draw from them (drawing words per note would take minutes
    at 50k notes). Word frequencies are skewed (Zipf-like) as in real text."""
    def weights(n: int) -> list[float]:
        return [1.0 / (i + 1) ** 0.8 for i in range(n)]

    nouns = list(NOUN_PHRASES)
    rng.shuffle(nouns)
    wn = weights(len(nouns))
    pool = []
    for _ in range(size):
        template = rng.choice(TEMPLATES)
        n, n2, n3 = rng.choices(nouns, wn, k=3)
        pool.append(
            template.replace("{N}", n[0].upper() + n[1:])
            .replace("{n}", n)
            .replace("{n2}", n2)
            .replace("{n3}", n3)
            .replace("{v}", rng.choice(VERBS))
            .replace("{v2}", rng.choice(VERBS))
            .replace("{a}", rng.choice(ADJECTIVES))
            .replace("{a2}", rng.choice(ADJECTIVES))
            .replace("{adv}", rng.choice(ADVERBS))
            .replace("{C}", rng.choice(CONNECTORS))
        )
    return pool


def _relpath(from_folder: str, to_path: str) -> str:
    """POSIX relative path from a folder to a file, both vault-relative (no os.path: stays portable)."""
    a = from_folder.split("/") if from_folder else []
    b = to_path.split("/")
    common = 0
    while common < len(a) and common < len(b) - 1 and a[common] == b[common]:
        common += 1
    return "/".join([".."] * (len(a) - common) + b[common:])


@dataclass(slots=True)
class _Counts:
    """What the generated links should resolve to (the manifest)."""

    links: dict[str, int] = field(default_factory=dict)  # by form
    broken_target: int = 0
    broken_anchor: int = 0
    broken_alias: int = 0  # broken, and the text is another note's alias
    code_non_links: int = 0
    frontmatter_links: int = 0
    external: int = 0
    rule_breaks: dict[str, int] = field(default_factory=dict)

    def add(self, form: str) -> None:
        self.links[form] = self.links.get(form, 0) + 1


class _Writer:
    def __init__(self, rng: random.Random, plan: _Plan, pool: list[str], counts: _Counts) -> None:
        self.rng = rng
        self.plan = plan
        self.pool = pool
        self.counts = counts
        self.spaced = [n.index for n in plan.notes if " " in n.link_name]
        self.with_blocks = [n.index for n in plan.notes if n.block_ids]
        self.stems_lower = {n.link_name.lower() for n in plan.notes}
        self.images = [a for a in plan.attachments if a.endswith((".png", ".svg"))]
        self.alias_candidates = [
            (a, n.index) for n in plan.notes for a in n.aliases[3:] if a.lower() not in self.stems_lower
        ]

    # -- links --------------------------------------------------------------------------------------
    def _target(self, note: _Note) -> _Note:
        # Two links in three stay in the note's own top folder (notes cite their neighbours), the rest
        # go anywhere in the vault.
        if self.rng.random() < 0.67:
            mates = self.plan.by_type[note.type]
            return self.plan.notes[mates[self.rng.randrange(len(mates))]]
        return self.plan.notes[self.rng.randrange(len(self.plan.notes))]

    def _link(self, note: _Note) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.02:
            return self._broken(note)
        roll = rng.random()
        t = self._target(note)
        name = t.link_name
        if rng.random() < 0.03:
            name = name.upper() if rng.random() < 0.5 else name.lower()  # case must not matter
        if roll < 0.28:
            self.counts.add("wikilink")
            return f"[[{name}]]"
        if roll < 0.45:
            self.counts.add("wikilink-display")
            return f"[[{name}|{t.subject}]]"
        if roll < 0.55:
            self.counts.add("wikilink-heading")
            return f"[[{name}#{rng.choice(t.headings)}]]"
        if roll < 0.58 and self.with_blocks:
            b = self.plan.notes[rng.choice(self.with_blocks)]
            self.counts.add("wikilink-block")
            return f"[[{b.link_name}#^{rng.choice(b.block_ids)}]]"
        if roll < 0.67:
            self.counts.add("wikilink-path")
            return f"[[{t.folder}/{t.link_name}]]"
        if roll < 0.74 and self.images:
            self.counts.add("embed-file")
            image = rng.choice(self.images).rsplit("/", 1)[1]
            return f"![[{image}|300]]" if rng.random() < 0.3 else f"![[{image}]]"
        if roll < 0.85:
            if self.spaced and rng.random() < 0.6:
                t = self.plan.notes[rng.choice(self.spaced)]
            rel = _relpath(note.folder, f"{t.folder}/{t.link_name}.md")
            self.counts.add("markdown")
            anchor = f"#{quote(t.headings[0])}" if rng.random() < 0.2 else ""
            return f"[{t.subject}]({quote(rel)}{anchor})"
        if roll < 0.88:
            rel = _relpath(note.folder, f"{t.folder}/{t.link_name}.md")
            self.counts.add("markdown-angle")
            return f"[{t.subject}](<{rel}>)"
        if roll < 0.94:
            self.counts.add("same-note-heading")
            return f"[[#{rng.choice(note.headings)}]]"
        if roll < 0.96:
            self.counts.add("embed-note")
            return f"![[{name}]]"
        if roll < 0.97:
            self.counts.external += 1
            return f"[la documentation](https://example.org/{_fold(t.subject)})"
        self.counts.add("wikilink-md-ext")
        return f"[[{name}.md]]"

    def _broken(self, note: _Note) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.25 and self.alias_candidates:
            alias, _owner = rng.choice(self.alias_candidates)
            self.counts.broken_alias += 1
            self.counts.broken_target += 1
            return f"[[{alias}]]"
        if roll < 0.75:
            self.counts.broken_target += 1
            return f"[[ancienne-note-{_fold(rng.choice(TOPICS))}-{rng.randrange(10**6):06d}]]"
        t = self.plan.notes[rng.randrange(len(self.plan.notes))]
        self.counts.broken_anchor += 1
        return f"[[{t.link_name}#Section supprimée]]"

    # -- whole note ---------------------------------------------------------------------------------
    def frontmatter(self, note: _Note) -> str:
        rng = self.rng
        notes = self.plan.notes
        domains, tags, aliases = list(note.domains), list(note.tags), list(note.aliases)
        priority = note.priority
        # A few deliberate rule breaks, as in the real GrasBot vault, for lint to find.
        breaks = self.counts.rule_breaks
        roll = rng.random()
        if roll < 0.005:
            domains = [d[0] for d in DOMAINS[:5]]
            breaks["domains-count"] = breaks.get("domains-count", 0) + 1
        elif roll < 0.01:
            tags = tags + ["tag-inconnu"]
            breaks["unknown-tag"] = breaks.get("unknown-tag", 0) + 1
        elif roll < 0.015:
            aliases = aliases[:2]
            breaks["aliases-count"] = breaks.get("aliases-count", 0) + 1
        elif roll < 0.018:
            priority = 12
            breaks["priority-range"] = breaks.get("priority-range", 0) + 1
        answers = [q.replace("{t}", note.subject) for q in rng.sample(QUESTION_TEMPLATES, rng.randint(2, 5))]
        related = [notes[rng.randrange(len(notes))] for _ in range(rng.randint(0, 4))]
        related = [r for r in related if r.index != note.index]
        lines = [
            "---",
            f"title: {_yaml_str(note.title)}",
            f"slug: {_yaml_str(note.link_name)}",
            f"type: {note.type}",
            f"source: {note.source}",
            f"domains: [{', '.join(domains)}]",
            f"tags: [{', '.join(tags)}]",
            "aliases:",
            *(f"  - {_yaml_str(a)}" for a in aliases),
            "answers:",
            *(f"  - {_yaml_str(q)}" for q in answers),
            f"priority: {priority}",
        ]
        linked = [notes[i].link_name for i in note.mocs]
        if linked:
            lines.append("linked:")
            lines.extend(f'  - "[[{s}]]"' for s in linked)
        else:
            lines.append("linked:")  # an empty (null) list, as MOCs have in the real vault
        if related:
            lines.append("related:")
            lines.extend(f'  - "[[{r.link_name}]]"' for r in related)
        self.counts.frontmatter_links += len(linked) + len(related)
        if rng.random() < 0.2:
            lines.append(f'link: "https://github.com/exemple/{_fold(note.subject)}"')
        lines.append(f"updated: {note.updated}")
        lines.append(f"visibility: {'private' if note.private else 'public'}")
        lines.append("---")
        return "\n".join(lines) + "\n"

    def body(self, note: _Note) -> str:
        rng = self.rng
        pool = self.pool
        subject = note.subject
        n_links = rng.randint(5, 10)
        # Spread the links over the sections: which paragraph slot gets each link.
        sections = len(note.headings)
        slots = [rng.randrange(sections) for _ in range(n_links)]
        blocks_left = list(note.block_ids)
        out = [f"**Slug :** `{note.link_name}`", ""]
        if note.type == "moc":
            out += [f"Notes du domaine *{note.domains[0]}*.", ""]
        for s, heading in enumerate(note.headings):
            out.append(f"## {heading}")
            out.append("")
            for _p in range(rng.choice((1, 1, 2))):
                sentences = [pool[rng.randrange(len(pool))] for _ in range(rng.randint(3, 5))]
                para = " ".join(sentences).replace("{t}", subject)
                if blocks_left and rng.random() < 0.5:
                    para += f" ^{blocks_left.pop()}"
                out.append(para)
                out.append("")
            here = slots.count(s)
            if here:
                if rng.random() < 0.3:
                    out.extend(f"- {self._link(note)} — _{', '.join(note.domains)}_" for _ in range(here))
                else:
                    out.append(
                        " ".join(
                            rng.choice(LINK_SENTENCES)
                            .replace("{C}", rng.choice(CONNECTORS))
                            .replace("{L}", self._link(note))
                            for _ in range(here)
                        )
                    )
                out.append("")
        for block in blocks_left:  # any block id not placed yet gets its own line
            out += [f"{pool[rng.randrange(len(pool))].replace('{t}', subject)} ^{block}", ""]
        roll = rng.random()
        if roll < 0.1:
            t = self.plan.notes[rng.randrange(len(self.plan.notes))]
            self.counts.add("table-escaped-pipe")
            out += [
                "| Élément | Lien |",
                "|---|---|",
                f"| {t.subject} | [[{t.link_name}\\|{t.subject}]] |",
                "",
            ]
        elif roll < 0.4:
            self.counts.code_non_links += 2
            out += [
                f"Exemple de syntaxe : `[[{_fold(subject)}-exemple]]` n'est pas un lien.",
                "",
                "```python",
                f"# [[{_fold(subject)}-dans-le-code]] reste du texte",
                f'lien = "[[{_fold(subject)}]]"',
                "```",
                "",
            ]
        return "\n".join(out)


# --------------------------------------------------------------------------------------------------
# Documents at the root
# --------------------------------------------------------------------------------------------------


def _taxonomy(example: _Note | None) -> str:
    lines = [
        "# Taxonomie du vault synthétique",
        "",
        "Vocabulaire contrôlé pour les champs `domains`, `tags`, `aliases`, `answers`",
        "du frontmatter YAML. Vault généré par `benchmarks/synth.py` (mêmes règles que",
        "le vault GrasBot).",
        "",
        "**Règle d'or** : si tu inventes un nouveau domaine ou tag, **ajoute-le ici",
        "avant** de l'utiliser dans une note. Pour `aliases`, libre à toi d'en",
        "ajouter autant que nécessaire par note.",
        "",
        "---",
        "",
        "## Domaines (`domains:`)",
        "",
        "Liste fermée. Une note doit avoir entre 1 et 4 domaines, du plus spécifique",
        "au plus général.",
        "",
        "| Slug | Libellé | Description |",
        "|---|---|---|",
        *(f"| `{slug}` | {label} | {desc} |" for slug, label, desc in DOMAINS),
        "",
        "## Tags (`tags:`)",
        "",
        "Plus libres que les domaines, mais garder une cohérence. Liste des tags",
        "actuellement utilisés :",
        "",
        "| Tag | Usage |",
        "|---|---|",
        *(f"| `{tag}` | {usage} |" for tag, usage in TAGS),
        "",
        "## Aliases (`aliases:`)",
        "",
        "Libre par note. **Objectif** : capter toutes les formulations naturelles que",
        "pourrait employer un visiteur pour désigner le sujet de la note.",
        "",
        "Règles :",
        "",
        "- **Entre 3 et 12 aliases par note** (ni trop peu pour la couverture, ni",
        "  trop pour ne pas bruiter le scoring).",
        "- Formes **courtes** (un à trois mots, en minuscules).",
        "- Inclure : **variantes orthographiques**, **acronymes**, **synonymes FR/EN**,",
        "  **formulations utilisateur** probables.",
        "- Ne **pas** inclure de phrases entières (c'est le rôle d'`answers:`).",
        "",
    ]
    if example is not None:
        lines += [
            "**Exemples** :",
            "",
            "```yaml",
            f"# Note {example.link_name}.md",
            "aliases:",
            *(f"  - {a}" for a in example.aliases[:6]),
            "```",
            "",
        ]
    lines += [
        "## Answers (`answers:`)",
        "",
        "Questions-types **formulées à la 1re personne du visiteur** auxquelles cette",
        "note apporte une réponse directe. Fort signal pour le retrieval.",
        "",
        "Règles :",
        "",
        "- **2 à 6 answers par note**.",
        "- Rédigées comme un visiteur **naturel** : *« Quelles sont ses compétences",
        "  en IA ? »*, pas *« compétences IA »*.",
        "- Ciblées : une answer doit **vraiment** appeler cette note comme source",
        "  principale (pas une note périphérique).",
        "",
        "## Priority (`priority:`)",
        "",
        "Entier de 1 à 10. Boost léger appliqué au scoring.",
        "",
        "| Valeur | Usage |",
        "|---|---|",
        "| 9–10 | Notes stratégiques (CV, MOCs principaux) |",
        "| 6–8  | Notes riches (compétences, projets emblématiques) |",
        "| 5    | Défaut (la plupart des projets) |",
        "| 3–4  | Notes techniques internes (auto-doc) |",
        "| 1–2  | Notes archivées, peu pertinentes pour le visiteur |",
        "",
        "## Visibility (`visibility:`)",
        "",
        "- `public` (défaut) : accessible au chatbot et indexable",
        "- `private` : **exclue** du retrieval (usage personnel)",
        "",
    ]
    return "\n".join(lines)


def _readme(notes: int, seed: int) -> str:
    return "\n".join(
        [
            "# Vault synthétique",
            "",
            f"Généré par `benchmarks/synth.py --notes {notes} --seed {seed}` : ne pas éditer à la main.",
            "Voir `TAXONOMIE.md` pour le vocabulaire contrôlé.",
            "",
        ]
    )


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def generate(out: Path, notes: int, seed: int = 42) -> Path:
    """Write a synthetic vault of `notes` notes into `out` (created; must not hold anything else) and
    return `out`. The same `(notes, seed)` always writes byte-identical files."""
    if notes < 1:
        raise ValueError("notes must be at least 1")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; generate into a new folder")
    rng = random.Random(seed)
    plan = _plan(rng, notes)
    pool = _sentence_pool(rng, min(20000, max(2000, notes * 2)))
    counts = _Counts()
    writer = _Writer(rng, plan, pool, counts)

    made: set[str] = set()

    def write(rel: str, data: bytes) -> None:
        path = out / rel
        parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
        if parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(parent)
        with open(path, "wb") as fh:
            fh.write(data)

    out.mkdir(parents=True, exist_ok=True)
    for note in plan.notes:
        text = writer.frontmatter(note) + writer.body(note)
        write(note.path, text.encode("utf-8"))
    for rel in plan.attachments:
        ext = rel.rsplit(".", 1)[1]
        magic = next(m for e, m in ATTACHMENT_KINDS if e == ext)
        write(rel, magic + rng.randbytes(rng.randint(16, 64)))
    projets = plan.by_type.get("projet") or [0]
    write("TAXONOMIE.md", _taxonomy(plan.notes[projets[0]]).encode("utf-8"))
    write("README.md", _readme(notes, seed).encode("utf-8"))
    manifest = {
        "generator_version": GENERATOR_VERSION,
        "notes": notes,
        "seed": seed,
        "attachments": len(plan.attachments),
        "folders": len(plan.folders),
        "private": sum(n.private for n in plan.notes),
        "nfd_file_names": sum(n.stem != n.link_name for n in plan.notes),
        "body_links": dict(sorted(counts.links.items())),
        "body_links_total": sum(counts.links.values())
        + counts.broken_target
        + counts.broken_anchor
        + counts.external,
        "frontmatter_links": counts.frontmatter_links,
        "external_links": counts.external,
        "broken_target": counts.broken_target,
        "broken_anchor": counts.broken_anchor,
        "broken_alias": counts.broken_alias,
        "code_non_links": counts.code_non_links,
        "rule_breaks": dict(sorted(counts.rule_breaks.items())),
    }
    write(MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return out


def read_manifest(vault: Path) -> dict:
    """The counts written by `generate` (links by form, broken links expected, ...)."""
    return json.loads((Path(vault) / MANIFEST).read_text(encoding="utf-8"))


def ensure_vault(notes: int, seed: int = 42) -> Path:
    """The synthetic vault `(notes, seed)` under benchmarks/_data/, generated on first use and reused.

    Safe when several processes ask at once: each generates into its own temporary folder and the
    first rename wins. A vault written by an older generator version is replaced."""
    target = DATA_DIR / f"synth-{notes}-{seed}"
    try:
        if read_manifest(target).get("generator_version") == GENERATOR_VERSION:
            return target
    except (OSError, ValueError):
        pass
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    tmp = DATA_DIR / f".tmp-synth-{notes}-{seed}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    generate(tmp, notes, seed)
    if target.exists():  # stale version (or a half-written folder from a crash): replace it
        stale = DATA_DIR / f".stale-{target.name}-{os.getpid()}"
        try:
            target.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass
    try:
        tmp.rename(target)
    except OSError:  # another process got there first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=1000, help="number of notes (default 1000)")
    parser.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    parser.add_argument("--out", type=Path, help="output folder (default: the cache, benchmarks/_data/)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        path = generate(args.out, args.notes, args.seed) if args.out else ensure_vault(args.notes, args.seed)
    except (FileExistsError, ValueError) as exc:
        print(f"synth: {exc}", file=sys.stderr)
        return 2
    print(f"{path}  ({args.notes} notes, seed {args.seed}, {time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
