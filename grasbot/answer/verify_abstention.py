"""Whether a sentence of an answer says the notes do not hold the answer: an *abstention*.

Read by the shape of the sentence, not by a list of sentences. A clause abstains when it joins a
**negation** to a **frame of knowledge**:

- a negation: `ne … pas / rien / aucun / jamais / plus / guère`, `rien ne …`, `aucun …`, `pas de …`,
  `not`, `n't`, `no`, `never`, `nothing`, or a word that carries its own (`ignorer`, `manquer`,
  `absent`, `muet`, `inconnu`, `impossible`, `non précisé`, `unknown`, `unable`, `unclear`);
- a frame of knowledge, one of three:
  1. **the speaker lacks it**: a verb of having or knowing (`avoir`, `savoir`, `connaître`, `trouver`,
     `voir`, `disposer`, `pouvoir dire`, `être en mesure`, `have`, `know`, `find`, `see`, `tell`, `sure`)
     whose subject is the speaker (`je`, `nous`, `I`, `we`): "Je n'ai pas son numéro", "J'ignore si…";
  2. **the sources do not state it**: a verb of stating or holding (`préciser`, `mentionner`, `dire`,
     `indiquer`, `contenir`, `parler`, `figurer`, `aborder`, `mention`, `say`, `cover`…) whose subject is a
     source (`notes`, `documents`, `fiches`, `contexte`, `extraits`, `sources`, `informations`) or nobody
     (`rien`, `cela`, `ce`, a passive `il n'est pas précisé`): "Ses notes restent muettes sur…";
  3. **knowledge is absent**: a knowledge noun (`information`, `mention`, `précision`, `détail`,
     `trace`, `élément`, `réponse`) negated where no one else is the subject: "Aucune information sur…",
     "Il n'y a pas de mention de…", "No information about…".

Three shapes complete them: the **missing fact as the subject** with the sources named, a passive of
stating or a verb of being found ("Le budget n'est pas documenté dans ses fiches", "Sa date n'apparaît
dans aucune note", "The amount is not stated in the notes I have"); the **speaker as an indirect object**
of a passive of knowing or stating ("Le prix ne m'est pas connu"); and a **clause without a verb** whose
`rien` or bare negation points at the sources ("Sur ses loisirs, rien dans les notes", "Pas un mot
là-dessus dans ses fiches"). A relative clause whose subject is the speaker, on a source noun or on `ce`,
is part of the subject, not the subject ("Les notes que j'ai ne disent rien", "Rien dans ce que j'ai ne
dit…"); a clause starting with `rien` or `aucun` has it as its subject.

A negative fact of a note has a third-person subject that is not a source and a verb of the world, so
it is not one: "Il n'a pas de permis", "Il ne parle pas allemand", "Le bot ne conserve aucune
information personnelle", "Aucune donnée n'a été perdue". An invitation to the visitor is not one either
("N'hésitez pas à consulter ses autres fiches"): the negated verb is neither of having nor of stating.

More shapes, each decided by a grammatical reason rather than by the phrasings of a set:

- the **negated passive of a verb of reporting** with no agent, even with no source named ("La date
  n'est pas précisée", "Le montant n'est indiqué nulle part", "The fee isn't stated"): in an answer
  written from notes, a passive of stating without an agent says what the text leaves out. A negative
  fact uses a verb of the world ("le prix n'est pas fixé", "the disk is not encrypted"); a predicate
  ("documenté comme obligatoire", "specified as optional"), a place or a manner that is not a source
  ("indiquée sur l'affiche", "documentée publiquement") or an agent that is not one ("précisé par le
  client") make it a fact too. The verbs that are of the world as often as of speech (donner, nommer,
  citer, connaître, give, name) count only when nothing completes them ("le nom n'est pas donné", not "le
  cours n'est pas donné en ligne"); verbs of supplying or processing (fournir, couvrir, traiter, provide,
  cover) never do. The cost was measured on the notes' own sentences (benchmarks/README.md);
- the **literary `ne` alone**, which the grammars allow with savoir and pouvoir ("Je ne saurais dire",
  "Je ne sais si…", "Je ne puis…"), unless `que` restricts ("je ne peux que…");
- **hedges**: an adjective of difficulty or impossibility governing an infinitive of knowing or saying
  ("Difficile à dire", "hard to tell whether…", not "difficile de dire non"), and an adjective of
  uncertainty or clarity before an indirect question ("il est incertain si…", "it is unclear whether…",
  "il n'est pas clair si…");
- **verbs of escaping knowledge** with the speaker as indirect object ("Cela m'échappe", "it escapes me",
  "unknown to me"), and of **exceeding the sources** ("dépasse ce que disent mes notes", "beyond what my
  notes cover");
- **`sans`**: "sans que ses notes le disent", and "sans en préciser…" after a clause whose subject is a
  source: a partial abstention after a fact ("Ses notes évoquent un stage, sans en préciser la durée");
- the speaker's **first-person possessive** makes a source ("ma documentation ne précise pas"), while a
  source noun with a bare noun complement or an English noun modifier is another thing ("notes de
  frais", "release notes"), like "mot de passe".

And what asserts nothing is never an abstention: a clause of **condition or time** ("si aucun préfixe
n'est spécifié, …", "if the path is not set"), an **imperative** or an **instruction** ("N'indiquez pas…",
"Ne jamais préciser…", "Don't mention…"). A knowledge noun that is the subject of a verb lets the verb
decide ("aucune information n'est précisée", against "aucune mention légale n'est exigée").

Where the word classes come from (grammar categories, not the items of a set): the verbs of knowing
(savoir, connaître, ignorer, know, be aware), of having and finding (avoir, disposer, trouver, have,
find), of saying and reporting — the *verba dicendi* and the verbs of recording (dire, préciser,
indiquer, mentionner, spécifier, détailler, évoquer, aborder, documenter, renseigner, expliquer, nommer,
chiffrer, recenser, say, state, mention, specify, document, name, quantify…) — of asserting and vouching
(affirmer, garantir, certifier, se prononcer, vouch), of dwelling on a topic (s'attarder, s'étendre,
elaborate), of appearing in a text (figurer, apparaître); the nouns of information, trace, detail,
mention and precision; the adjectives of silence, vagueness and uncertainty (muet, silencieux, vague,
unclear); the French negations (`ne … pas / plus / jamais / guère / nullement / aucun / rien / nulle
part / ni`, `ne` alone, `sans`) and the English ones (`not`, `n't`, `no`, `nothing`, `none`, `never`,
`nowhere`, `without`); the modal and conditional forms of pouvoir and savoir (peux, pourrais, saurais,
puis, can, could).

Verbs are compared by lemma: the irregular forms of the few verbs that need it are listed
(`ai` → avoir, `sais` → savoir, `peux` → pouvoir), the others by their stem (`précis-`, `mentionn-`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from grasbot.answer.verify_claims import fold_text

__all__ = ["is_abstention"]

# -- words -------------------------------------------------------------------------------------------
_IRREGULAR = {
    "avoir": "ai a as avons avez ont avais avait avions aviez avaient aurai aurais aurait aurions auraient eu eue avoir have has had having got",
    "savoir": "sais sait savons savez savent savais savait saurai saurais saurait saurions su savoir know knows knew known",
    "connaitre": "connais connait connaissons connaissez connaissent connaissais connu connue connaitre",
    "voir": "vois voit voyons voyez voient voyais voyait vu vue voir see sees saw seen",
    "pouvoir": "peux puis peut pouvons pouvez peuvent pouvais pouvait pourrai pourrais pourrait pourrions pu pouvoir can could cannot able unable",
    "dire": "dis dit disons disent disait dirait dire say says said tell tells told",
    "etre": "suis es est sommes etes sont etais etait etaient serai serais serait ete etre am is are was were be been being",
    "contenir": "contient contiennent contenait contenaient contiendrait contenu contenir",
    "apparaitre": "apparait apparaissent apparaissait apparu apparaitre appear appears appeared",
    "aller": "va vont allait allaient iront go goes went",
    "faire": "fais fait faisons faites font faisait faisaient fera ferait feraient faire make makes made",
    "arriver": "arrive arrives arrivons arrivez arrivent arrivais arrivait arriverais arriverait arriver manage manages managed",
    "parvenir": "parviens parvient parvenons parviennent parvenais parvenait parviendrais parviendrait parvenu parvenir",
    "reussir": "reussis reussit reussissons reussissent reussissais reussissait reussirais reussirait reussi reussir",
    "oser": "ose oses osons osez osent osais osait oserai oserais oserait oser dare",
    "permettre": "permet permettent permettait permettaient permettrait permis permettre allow allows",
}
_LEMMA = {form: lemma for lemma, forms in _IRREGULAR.items() for form in forms.split()}

#: Verbs of having or knowing: the speaker lacks the fact. (Stems: a word starting with one of them.)
_KNOW_LEMMAS = frozenset({"avoir", "savoir", "connaitre", "voir", "pouvoir"})
_KNOW_STEMS = ("trouv", "retrouv", "dispos", "ignor", "manqu", "find", "found", "locat", "sure", "certain",
               "awar", "confirm", "recall", "rappel", "souvien", "souvenir", "idea", "idee", "acces", "access")
#: Verbs of stating or holding: the source does not state it.
_STATE_LEMMAS = frozenset({"dire", "contenir", "apparaitre", "aller", "permettre"})
_STATE_STEMS = (
    "precis", "mentionn", "indiqu", "parl", "donn", "detaill", "evoqu", "abord", "figur", "renseign",
    "document", "specifi", "couvr", "couvert", "trait", "cit", "expliqu", "decri", "decriv", "comport",
    "fourn", "signal", "trouv", "exist", "communiqu", "affirm", "confirm",
    "mention", "stat", "specif", "cover", "includ", "contain", "indicat", "describ", "discuss", "address",
    "show", "provid", "giv", "detail", "list", "explain", "record", "say", "said", "tell", "told", "answer",
    "repond", "repons", "dispon", "availab", "clear", "known", "connu", "aid", "ecrit", "written",
    # verbs of naming, quantifying, listing, recording, revealing (verba dicendi beyond "say"): "les notes
    # ne le nomment pas", "ne le chiffrent pas", "don't name", "don't quantify", "ne recensent pas"
    "nomm", "chiffr", "enumer", "recens", "repertori", "consign", "stipul", "explicit", "retrac",
    "revel", "soulign", "attest", "eclair", "ressort", "rapporte", "name", "quantif", "enumerat", "report", "reveal",
    "disclos", "spell", "clarif", "apprenn", "apprend", "inform",
    # verbs of asserting and vouching ("je ne peux pas le garantir", "can't vouch for it") and of
    # dwelling on a topic ("ne s'attardent pas sur", "ne s'étendent pas sur", "don't elaborate")
    "allusion", "garant", "certifi", "assur", "prononc", "guarant", "vouch", "attard", "etend", "appesant", "dwell", "elaborat",
)
#: Nouns of what an answer knows from (a subject that is a source: frame 2).
_SOURCE_NOUNS = frozenset(
    "note notes document documents source sources fiche fiches contexte context extrait extraits passage "
    "passages texte textes information informations info infos element elements record records page pages "
    "material materials data documentation docs ressources resources archives ecrits".split()
)
#: First-person possessives: what the speaker answers from is its sources ("ma documentation ne
#: précise pas", "my files don't say"); the assistant has no possessions of the world to speak of.
_SPEAKER_POSSESSIVE = frozenset({"mes", "ma", "mon", "nos", "notre", "my", "our"})
#: Nouns of knowledge (what is absent: frame 3). Not `donnée` ("aucune donnée n'a été perdue" is a fact).
_KNOWLEDGE_NOUNS = frozenset(
    "information informations info infos mention mentions precision precisions indication indications detail "
    "details trace traces element elements reponse reponses renseignement renseignements reference "
    "references answer answers record records idee idea allusion allusions".split()
)
#: Words of what is absent only after a bare negation ("pas un mot là-dessus", "not a word about"): as a
#: subject they are things of the world ("les mots-clés ne peuvent pas contenir d'espaces").
_ABSENT_WORDS = frozenset({"mot", "mots", "word", "words", "ligne", "line"})
#: A knowledge noun followed by these is another thing ("mot de passe" is a password, not a word).
_NOT_KNOWLEDGE_AFTER = (("de", "passe"),)
#: What introduces a relative clause: "les notes que j'ai", "ce dont je dispose", "what I have".
_RELATIVE = frozenset({"que", "qui", "dont", "what", "which", "that"})
#: Verbs of being found somewhere (with the sources named, the fact is absent from them).
_APPEAR_STEMS = ("figur", "apparai", "apparu", "exist", "trouv", "appear", "occur")
_SPEAKER = frozenset({"je", "nous", "i", "we", "me", "moi", "on"})
#: Subjects that are nobody: the clause is impersonal ("rien n'indique", "aucune note ne précise").
_NOBODY = frozenset({"rien", "nothing", "there", "nul", "aucun", "aucune", "none", "personne"})
#: Demonstratives: nobody in a passive ("ce n'est pas précisé", "it is not mentioned") or when the clause
#: names the sources ("cela ne figure pas dans ses notes"); otherwise they stand for a thing of the world
#: ("it does not include a cache").
_DEMONSTRATIVE = frozenset({"ce", "cela", "ca", "ceci", "it", "this", "that"})
#: What may stand between `ne` and the verb (clitics) or between the verb and its participle.
_CLITICS = frozenset({"le", "la", "les", "l", "en", "y", "lui", "leur", "me", "m", "vous", "te", "se", "s", "nous"})
_CLOSERS = frozenset({"pas", "rien", "aucun", "aucune", "jamais", "plus", "guere", "nullement", "point", "nulle", "ni", "aucunement", "personne"})
#: The French verbs that may be negated by `ne` alone in the literary register (the grammars' `ne`
#: explétif-free negation with savoir, pouvoir, oser, cesser): "je ne saurais dire", "je ne sais si".
#: Of them savoir makes a frame of knowledge, pouvoir and oser one of ability when a verb of knowing or
#: stating follows ("je n'oserais l'affirmer").
_BARE_NE = frozenset({"savoir", "pouvoir", "oser"})
#: Verbs of reporting proper (verba dicendi and verbs of recording: saying, stating, specifying,
#: mentioning, documenting, detailing, describing, explaining, quantifying). Their negated passive
#: without an agent ("X n'est pas précisé", "X is not stated anywhere") reports what a text leaves out:
#: in an answer written from notes, a statement about the notes. A negative fact uses a verb of the
#: world instead ("le prix n'est pas fixé", "the disk is not encrypted").
_REPORT_STEMS = (
    "precis", "mentionn", "specifi", "detaill", "document", "renseign", "explicit", "evoqu", "indiqu", "signal",
    "expliqu", "decrit", "stipul", "quantifi", "enumer", "recens", "repertori", "consign", "rapporte",
    "mention", "stated", "detail", "describ", "indicat", "explain", "reported", "spelled", "spelt", "disclos",
    "listed", "quantified", "recorded",
)
#: Verbs of communication whose first sense may also be of the world (donner, communiquer, aborder,
#: citer, nommer, connaître; give, name, address, discuss, cite, know): their negated passive is about
#: the sources only when nothing completes it ("le nom n'est pas donné", against "le cours n'est pas
#: donné en ligne", "il n'a pas été nommé directeur"). Verbs of supplying or processing (fournir, couvrir,
#: traiter, chiffrer, provide, cover) are of the world first and never read so.
_REPORT_BARE_STEMS = ("donn", "communiq", "abord", "cite", "nomm", "connu", "dit", "dite", "given", "named", "addressed", "discussed", "cited", "known", "said", "told")
#: What may follow a bare passive of reporting and still leave it bare: adverbs of place in a text and of
#: explicitness ("n'est mentionné nulle part", "not stated explicitly anywhere").
_TEXT_ADVERBS = frozenset(
    "ici nulle part explicitement clairement precisement exactement formellement dedans non plus "
    "here anywhere nowhere explicitly clearly exactly specifically precisely either".split()
)
#: What makes a passive a predication or names its agent: "documenté comme obligatoire", "specified as
#: optional", "écrit en Rust", "précisé par le client" (an agent that is a source is read by
#: `_names_sources`).
_PREDICATIVE = frozenset({"comme", "as", "en", "tant", "par", "by", "like", "to", "a", "au", "aux"})
#: Conjunctions of condition and time: the clause they open asserts nothing ("si aucun préfixe n'est
#: spécifié, …", "if the path is not specified").
_CONDITION = frozenset({"si", "if", "when", "whenever", "unless", "lorsque", "lorsqu", "quand", "tant", "until", "once"})
#: Adjectives of difficulty or impossibility governing an infinitive of knowing or saying: a hedge that
#: abstains ("difficile à dire d'après ses notes", "hard to tell whether…").
_DIFFICULT = ("difficil", "malais", "impossib", "hard", "difficult", "impossible", "tough")
#: Adjectives of uncertainty: with an indirect question they abstain ("on ne sait pas", "il est incertain
#: s'il…", "it is unclear whether…").
_UNCERTAIN = ("unclear", "incertain", "uncertain", "inconnu", "unknown", "obscur", "flou")
#: Words that open an indirect question (what is not known): si / s'il, combien, quand, où, pourquoi,
#: comment, quel…, whether, if, how, when, where, why, what, which, who.
_INDIRECT = frozenset("si combien quand ou pourquoi comment quel quelle quels quelles lequel laquelle whether if how when where why what which who".split())
#: Verbs of knowing for the hedges (the infinitive after a word of difficulty).
_KNOW_INFINITIVES = ("dire", "savoir", "affirm", "tranch", "determin", "precis", "confirm", "estim", "conclu", "say", "tell", "know", "judge")
#: Verbs whose meaning is "not to be known by", with the speaker as indirect object: "cela m'échappe",
#: "the date escapes me", "it eludes me" (their own negation, like `ignorer`).
_ESCAPE_STEMS = ("echapp", "escap", "elud")
#: Verbs of aboutness (concerner, porter sur, toucher à, concern, relate to): a verb of the topic of a text
#: only when the text is the subject or is named ("Rien dans ce que j'ai ne concerne…"); otherwise of the
#: world ("la réforme ne concerne pas les mineurs").
_TOPIC_STEMS = ("concern", "porte", "portent", "touch", "relat")
#: Verbs and prepositions of exceeding a boundary: with the sources as the boundary, what is asked lies
#: outside them ("cela dépasse ce que contiennent ses notes", "sort du cadre de mes notes", "beyond what
#: my notes cover", "outside the scope of the documents").
_EXCEED_STEMS = ("depass", "exced", "outrepass", "beyond", "outside", "exceed", "hors")
_SOURCE_DETERMINERS = frozenset("les mes ses ces nos vos leurs the my our these those his her their".split())
_EXCEED_WORDS = frozenset({"sort", "sortent", "sortir", "sortait", "sortirait"})  # not "sorted", "sortie"
#: Words that carry their own negation (their stem).
_SELF_NEGATIVE = ("ignor", "manqu", "absen", "muet", "inconn", "impossib", "indisponib", "unknown", "unable", "unclear", "unsure", "lack", "missing", "silent", "silenc",
                  # adjectives of vagueness, with a source as subject: "les notes restent vagues sur…"
                  "vague", "imprecis", "evasi", "laconi", "sketchy")

_ENGLISH_DETERMINERS = frozenset("the a an this that these those his her its their my our your top behalf".split())
_TOKEN = re.compile(r"[a-z0-9]+")
_QUOTED = re.compile(r"«[^«»]*»|“[^“”]*”|\"[^\"\n]*\"")
_CLAUSE_BREAK = re.compile(r"[,;:.!?()\[\]—–]|\b(?:mais|car|but|because|however|pourtant|cependant)\b")
_ENGLISH_CONTRACTIONS = ((re.compile(r"\bcan't\b|\bcannot\b"), "can not"), (re.compile(r"\bwon't\b"), "will not"), (re.compile(r"n't\b"), " not"), (re.compile(r"'m\b"), " am"), (re.compile(r"'s\b"), " is"))


_FRENCH_COMPOUND = re.compile(
    r"\b((?i:notes?|fiches?|documents?|sources?|textes?|extraits?))(\s+(?:de\s+|d['’]))"
    r"(?!(?i:la|le|les|l|son|sa|ses|mon|ma|mes|ton|ta|tes|notre|nos|votre|vos|leur|leurs|ce|cet|cette|ces|un|une|des)\b)(?=[a-zà-ÿ])"
)
_ENGLISH_MARKERS = frozenset("the is are was were do does did not have has".split())
#: What may stand before an English source noun and keep it the source ("the notes", "my documents",
#: "the available notes"); another noun before it makes a compound ("the release notes", "meeting notes").
_BEFORE_SOURCE = frozenset(
    "the a an my our your his her its their these those this that some any all both no none of in from within "
    "by on to and or with what which whose few several other same such own each every i we you is".split()
)
_ADJECTIVE_ENDINGS = ("ed", "able", "ible", "ant", "ent", "al", "ous", "ive", "ing", "ful", "ic", "ary", "ory", "ish", "less")


def _english_compounds(words: list[str]) -> list[str]:
    """`words` with an English source noun after a noun modifier renamed ("release notes" is not the notes)."""
    if _ENGLISH_MARKERS.isdisjoint(words):
        return words
    return [
        w + "x" if w in _SOURCE_NOUNS and k and words[k - 1].isalpha() and words[k - 1] not in _BEFORE_SOURCE and not words[k - 1].endswith(_ADJECTIVE_ENDINGS) else w
        for k, w in enumerate(words)
    ]


def _lemma(word: str) -> str:
    return _LEMMA.get(word, word)


def _is_know(word: str) -> bool:
    return _lemma(word) in _KNOW_LEMMAS or word.startswith(_KNOW_STEMS)


def _is_state(word: str) -> bool:
    return _lemma(word) in _STATE_LEMMAS or word.startswith(_STATE_STEMS)


def _clauses(text: str) -> list[list[str]]:
    # a source noun with a bare noun complement names another thing ("notes de frais", "notes de
    # version", "fiches de paie"), like "mot de passe": it is read as another word; a proper name or a
    # determiner after `de` keeps the source ("les notes d'Aurèle", "les notes de ce projet")
    text = _FRENCH_COMPOUND.sub(lambda m: m.group(1) + "x" + m.group(2), text)
    folded = fold_text(_QUOTED.sub(" ", text)).replace("’", "'").replace("ʼ", "'")
    for pattern, repl in _ENGLISH_CONTRACTIONS:
        folded = pattern.sub(repl, folded)
    out = []
    for clause in _CLAUSE_BREAK.split(folded):
        # elisions read as their full word: n' -> ne, j' -> je, l' -> le, qu' -> que, d' -> de
        clause = re.sub(r"\bs'(?=ils?\b)", "si ", clause)  # "s'il" is "si il" (not the pronoun `se`)
        clause = re.sub(r"\b([njlmtsdc]|qu)'", lambda m: {"n": "ne ", "j": "je ", "l": "le ", "m": "me ", "t": "te ", "s": "se ", "d": "de ", "c": "ce ", "qu": "que "}[m.group(1)], clause)
        words = _TOKEN.findall(clause)
        # "faire état de" is to mention ("les notes n'en font pas état"): read its noun as the verb
        words = ["mention" if w == "etat" and any(v.startswith(("fai", "font", "fer", "fass")) for v in words[max(0, k - 3) : k]) else w for k, w in enumerate(words)]
        if words:
            out.append(_english_compounds(words))
    return out


def _subject(words: list[str], at: int) -> str:
    """The kind of the subject of the verb negated at `at`: "speaker", "source", "nobody" or "other"."""
    before = [w for w in words[:at] if w not in _CLITICS or w in ("nous", "me")]
    if not before:
        return "nobody"
    # the nearest pronoun or noun before the negation decides; "il y a" is impersonal
    if words[at : at + 3][:2] in (["y", "a"], ["y", "avait"]) or (len(words) > at + 1 and words[at + 1] == "y"):
        return "nobody"
    # a relative clause on a source noun or on `ce`/`what` ("les notes que j'ai sous la main ne disent",
    # "rien dans ce que j'ai ne dit"): its own subject is not the clause's
    for k, word in enumerate(before):
        held = before[k + 2 :] and (_is_know(before[k + 2]) or before[k + 2].startswith(("consult", "lu", "read", "recu", "receiv")))
        if word in _RELATIVE and k and (before[k - 1] in _SOURCE_NOUNS or before[k - 1] in ("ce", "what") or held) and before[k + 1 : k + 2] and before[k + 1] in _SPEAKER and before[k + 2 :]:
            # what the speaker has or consults is its source: "le dossier que j'ai", "ce que j'ai lu"
            before = before[: k - 1] + (["notes"] if before[k - 1] in ("ce", "what") or held else [before[k - 1]])
            break
    for k, word in enumerate(before):
        if word in _SOURCE_NOUNS and before[k + 1 : k + 2] and before[k + 1] in ("i", "we") and before[k + 2 :]:
            before = before[: k + 1]  # "the documents I have don't say": a relative without `that`
            break
    if before[0] in _NOBODY and before[0] not in ("there", "none"):
        return "nobody"  # "rien dans ses fiches ne précise", "aucune de mes notes ne le dit"
    if before[0] == "ni":
        return "other"  # "ni la date ni le lieu ne sont précisés": the missing facts are the subject
    for word in reversed(before[-4:]):
        if word in _SPEAKER_POSSESSIVE and word != before[-1]:
            return "source"  # "ma documentation ne précise pas", "my files don't say" (no pronoun nearer)
        if word == "on" and "ne" not in words and not (words[0] == "on" and words[1:2] and words[1] not in _ENGLISH_DETERMINERS):
            continue  # English `on` is a preposition ("the on-call pay"), French `on` a subject
        if word in _SPEAKER:
            return "speaker"
        if word in _SOURCE_NOUNS or word in _KNOWLEDGE_NOUNS:
            return "source"  # "ses notes ne disent pas", "ce détail n'est pas documenté"
        if word in _NOBODY:
            return "nobody"
        if word in _DEMONSTRATIVE:
            return "il"
        if word in ("il", "elle", "ils", "elles", "he", "she", "they", "you", "tu", "vous"):
            return "other" if word != "il" else "il"
    return "other"


def _names_sources(words: list[str]) -> bool:
    """Whether the clause points at the sources: "dans ses notes", "in the notes", "d'après le contexte"."""
    return any(
        w in ("dans", "in", "from", "selon", "apres", "within", "par", "by", "partir", "according", "based", "vu")
        and (
            any(v in _SOURCE_NOUNS for v in words[k + 1 : k + 4])
            # "dans ce que j'ai", "dans ce dont je dispose", "in what I have"
            or words[k + 1 : k + 3] in (["ce", "que"], ["ce", "dont"], ["what", "i"], ["what", "we"])
        )
        for k, w in enumerate(words)
    )


def _points_at_sources(words: list[str]) -> bool:
    """Whether `words` hold a source noun after a determiner ("mes notes", "the documents", not "the HTML
    context") or "ce que j'ai / ce que disent…", "what I have"."""
    return any(w in _SOURCE_NOUNS and k and words[k - 1] in _SOURCE_DETERMINERS for k, w in enumerate(words)) or any(words[k : k + 2] in (["ce", "que"], ["what", "i"], ["what", "my"], ["what", "the"]) for k in range(len(words)))


def _is_knowledge(words: list[str], k: int) -> bool:
    """Whether words[k] is a noun of knowledge (not "mot de passe")."""
    return (words[k] in _KNOWLEDGE_NOUNS or words[k] in _ABSENT_WORDS) and tuple(words[k + 1 : k + 3]) not in _NOT_KNOWLEDGE_AFTER


def _frames(words: list[str]) -> bool:
    """Whether one clause (folded words, elisions spelt out) holds a negation in a frame of knowledge."""
    n = len(words)
    for i, word in enumerate(words):
        if _in_condition(words, i):
            break  # what follows `si`, `lorsque`, `if`, `when` is a condition, not a statement
        if word == "ne":
            # French `ne ... pas`: the verb between, and a participle or infinitive after the closer
            close = next((j for j in range(i + 1, min(n, i + 6)) if words[j] in _CLOSERS), None)
            if i == 0 and _is_instruction(words, close):
                continue  # "Ne mentionnez pas…", "Ne jamais donner…": an imperative or an instruction
            subject = _subject(words, i)
            if close is None:
                verb = next((w for w in words[i + 1 : i + 4] if w not in _CLITICS), "")
                after_verb = [w for w in words[words.index(verb, i) + 1 :] if w not in _CLITICS][:1] if verb else []
                if subject == "speaker" and _lemma(verb) in _BARE_NE and after_verb != ["que"]:
                    # the literary `ne` alone: "je ne saurais dire", "je ne sais si", "je ne puis le dire"
                    rest = [w for w in words[i + 1 : i + 6] if w not in _CLITICS]
                    if _judge(words, subject, rest[:1], rest[1:3], words[i + 2 : i + 5]):
                        return True
                    continue
                if subject not in ("nobody", "source") and "ni" not in words[:i] and "nulle" not in words[:i]:
                    continue  # "ne ... que" restricts; only "rien ne", "aucune note ne", "ni… ni… ne" deny without a closer
                verbs, after, following = words[i + 1 : i + 3], [], words[i + 3 : i + 6]
            else:
                verbs = [w for w in words[i + 1 : close] if w not in _CLITICS]
                after = [w for w in words[close + 1 : close + 5] if w not in _CLITICS and w not in ("de", "a", "que", "part")][:3]
                if verbs and _lemma(verbs[-1]) not in _GOVERNING and verbs[-1] not in _AUXILIARY:
                    after = []  # a full verb: what follows is its object ("ne préserve pas les données"), not a participle
                following = words[close + 1 : close + 4]
            if _judge(words, subject, verbs, after, following):
                return True
            if close is not None and words[close] in ("rien", "aucun", "aucune") and subject == "nobody" and any(_lemma(w) == "avoir" for w in verbs):
                if _names_sources(words[close:]) or _is_topic(words[close + 1 :]):
                    return True  # "Il n'y a rien sur ce sujet", "il n'y a rien dans ses notes"
            if subject in ("other", "il") and _bare_passive(words, i + 1):
                return True  # "Le délai n'est pas précisé", "Le thème n'est mentionné nulle part"
            # the speaker as an indirect object of a passive of knowing or stating: "ne m'est pas connu",
            # "ne nous a pas été communiqué", "ne m'est pas précisé par les notes"
            if close is not None and any(w in ("me", "nous") for w in words[i + 1 : close]) and any(_lemma(w) == "etre" for w in [*verbs, *after]):
                # (a verb of access only when the subject is knowledge: "cette information ne m'est pas
                # accessible", against "vos données ne nous sont jamais accessibles")
                knowledge_subject = any(w in _KNOWLEDGE_NOUNS for w in words[:i])
                if any(_lemma(w) in ("savoir", "connaitre") or _is_state(w) or (knowledge_subject and _is_know(w)) for w in [*verbs, *after] if _lemma(w) not in ("etre", "avoir")):
                    return True
        elif word in ("not", "never", "nowhere"):
            if i == 0 and word == "not" and _bare_participle(words, 1):
                return True  # a clause without a verb: "Not specified anywhere", "Not documented"
            if word == "nowhere" and i == 0 and _names_sources(words):
                return True  # "Nowhere in the notes"
            if words[:i] == ["do"] or i == 0:
                continue  # "Don't mention…", "Never share…": an imperative
            # the auxiliary before `not` heads the group: "that information is not in my notes"
            modal = [words[i - 1]] if i and (_lemma(words[i - 1]) == "pouvoir" or words[i - 1] in _BE) else []
            nxt = [w for w in words[i + 1 : i + 6] if w not in ("to", "the", "a", "any", "be", "been")][:3]
            subject = _subject(words, i)
            passive = words[i - 1] in ("is", "are", "was", "were") or words[i + 1 : i + 2] == ["been"]
            if word != "nowhere" and _judge(words, subject, [*modal, *nxt], [], words[i + 1 : i + 4], passive=passive):
                return True
            if subject in ("other", "il") and _bare_passive(words, i - 2 if word == "nowhere" and i >= 2 else i - 1):
                return True  # "The deadline isn't specified", "The fee is mentioned nowhere"
        elif word in ("no", "nothing", "none", "aucun", "aucune", "nul", "nulle", "pas", "without", "sans", "rien"):
            if word in ("nul", "nulle") and words[i + 1 : i + 2] == ["part"]:
                if i == 0 and _names_sources(words):
                    return True  # "Nulle part dans ses notes…"
                continue  # "nulle part" after a verb: the closer of a `ne`
            if word == "rien" and "ne" not in words:
                # a clause without a verb: "Sur son salaire, rien dans les notes", "rien de tel dans ce que
                # j'ai", "Rien sur ses loisirs", "Rien à ce sujet"
                if _names_sources(words[i:]) or (i == 0 and (_is_topic(words[1:]) or (words[1:2] == ["de"] and _is_topic(words[3:])))):
                    return True
                continue
            if word == "rien":
                continue  # `rien` with `ne`: read at `ne`
            if word in ("pas", "aucun", "aucune") and "ne" in words[max(0, i - 5) : i]:
                continue  # the closer of a `ne ... pas` read above
            subject = _subject(words, i)
            nxt = words[i + 1 : i + 4]
            if i == 0 and word in ("pas", "not") and _bare_participle(words, 1):
                return True  # a clause without a verb: "Pas précisé dans ses fiches", "Not specified anywhere"
            # "Aucune information sur...", "pas de précision", "I have no details", "no mention in the notes"
            if word in ("without", "sans") and _sans_frame(words, i):
                return True
            if word == "none" and words[i + 1 : i + 2] == ["of"] and _points_at_sources(words[i + 2 : i + 5]):
                return any(_is_state(w) for w in words[i + 3 : i + 7])  # "None of the notes mention it"
            if subject == "speaker" and i and _lemma(words[i - 1]) == "avoir":
                return True  # "I have no way of knowing", like "je n'ai aucun moyen de le savoir"
            if subject in ("nobody", "speaker", "source") and any(_is_knowledge(words, k) for k in range(i + 1, min(n, i + 4))):
                # the knowledge noun as the subject of a verb: the verb decides ("aucune information
                # n'est précisée", against "aucune mention légale n'est exigée"), and an agent that is
                # not a source makes a fact ("aucun détail n'a été rendu public par l'entreprise")
                if _has_agent(words) or "ne" in words[i + 1 :] or _english_verb_after(words, i):
                    continue
                if word not in ("without", "sans") or _names_sources(words):
                    return True
            if word == "nothing" and subject in ("nobody", "speaker", "source") and nxt:
                # "Nothing in the notes about…", "Nothing in what I have says…", "nothing indicates…";
                # not "Nothing in the cache is persisted" (the cache is no source)
                if _is_state(nxt[0]) or nxt[0] in ("about", "on") or (nxt[0] == "in" and _names_sources(words[i:])):
                    return True
        elif word.startswith(_SELF_NEGATIVE):
            subject = _subject(words, i)
            if word.startswith(("inconn", "unknown")) and words[i + 1 : i + 3] in (["to", "me"], ["de", "moi"], ["to", "us"]):
                return True  # "The date is unknown to me"
            if subject == "speaker" and word.startswith(("ignor", "manqu", "unsure", "lack", "impossib", "unable", "inconn")):
                return True  # "J'ignore si...", "Je manque d'éléments", "I am unable to say", "…m'est inconnu"
            if word.startswith("impossib") and any(_is_know(w) or _is_state(w) for w in words[i + 1 : i + 5]):
                return True  # "Il m'est impossible de le dire", "Impossible de savoir d'après ses notes"
            if subject in ("source", "nobody") or _names_sources(words[i:]) or (subject == "il" and any(w in _KNOWLEDGE_NOUNS for w in words[:i])):
                if not word.startswith(("ignor", "impossib", "unable")):
                    return True  # "Ses notes restent muettes", "absent des notes", "cette information est inconnue"
        elif word == "non" and i + 1 < n and _is_state(words[i + 1]) and (_names_sources(words) or i == 0 or words[i - 1] in _KNOWLEDGE_NOUNS):
            return True  # "non précisé dans les notes", "information non documentée"
        if word.startswith(_DIFFICULT) and _hedge(words, i + 1):
            return True  # "Difficile à dire d'après ses notes", "Hard to tell whether…"
        if word.startswith(_UNCERTAIN) and words[i + 1 : i + 2] and words[i + 1] in _INDIRECT:
            return True  # "Il est incertain s'il…", "It is unclear whether…"
        if word in ("clair", "clear", "certain", "sur", "sure", "evident", "obvious") and words[i + 1 : i + 2] and words[i + 1] in _INDIRECT:
            neg = next((j for j in range(max(0, i - 4), i) if words[j] in ("ne", "not", "pas")), None)
            if neg is not None and _subject(words, neg) in ("il", "speaker", "nobody"):
                return True  # "Il n'est pas clair si…", "I am not sure whether…", "It isn't clear when…"
        if (word.startswith(_EXCEED_STEMS) or (word in _EXCEED_WORDS and words[i + 1 : i + 2] in (["du"], ["de"], ["des"]))) and _points_at_sources(words[i + 1 : i + 7]):
            return True  # "Cela dépasse ce que disent mes notes", "sort du cadre de ses fiches", "beyond my notes"
        if word.startswith(_ESCAPE_STEMS) and ("me" in words[max(0, i - 3) : i] or words[i + 1 : i + 2] == ["me"]):
            return True  # "Cela m'échappe", "The exact figure escapes me"
    return False


def _sans_frame(words: list[str], at: int) -> bool:
    """`sans` / `without` at `at`: "sans que ses notes le disent" (a source or nobody then a verb of stating),
    "…reste sans réponse dans les notes" (a knowledge noun, the sources named)."""
    rest = words[at + 1 :]
    if rest[:1] == ["que"]:
        sub = rest[1:]
        return any(_is_state(w) for w in sub[1:5]) and _subject(sub + ["ne"], len(sub[:3])) in ("source", "nobody")
    return any(_is_knowledge(words, k) for k in range(at + 1, min(len(words), at + 4))) and _names_sources(words)


def _in_condition(words: list[str], at: int) -> bool:
    """Whether words[at] opens a clause of condition or time ("si aucun préfixe n'est spécifié", "s'il
    n'est pas fourni", "if the path is not specified")."""
    word = words[at]
    if word not in _CONDITION:
        return False
    if word == "tant":
        return words[at + 1 : at + 2] == ["que"]
    return True


def _is_instruction(words: list[str], close: int | None) -> bool:
    """Whether a clause starting with `ne` is an imperative or an instruction, asserting nothing:
    "Ne mentionnez pas…", "N'indiquez pas…" (a verb of the second person plural or first plural with no
    subject), "Ne jamais donner…", "Ne pas préciser…" (the closer straight after `ne`, then an infinitive)."""
    if close == 1:
        return True
    verb = next((w for w in words[1:4] if w not in _CLITICS), "")
    return verb.endswith(("ez", "ons")) and _lemma(verb) != "etre"


def _is_topic(words: list[str]) -> bool:
    """Whether `words` open with a preposition of topic: "sur", "concernant", "quant à", "au sujet de",
    "à propos de", "là-dessus", "about", "regarding", "on"."""
    head = words[:2]
    return bool(head) and (head[0] in ("sur", "concernant", "quant", "about", "regarding", "on") or head in (["au", "sujet"], ["a", "propos"], ["la", "dessus"], ["a", "ce"]))


#: Verbs whose participle, infinitive or noun of stating comes after the closer: the auxiliaries, the
#: modals and verbs of managing, the light verb `faire` ("faire mention", "faire état"), and the verbs that
#: govern an infinitive ("n'a pas précisé", "ne peut pas dire", "n'arrive pas à trouver", "ne permet pas
#: de dire", "n'en font aucune mention").
_GOVERNING = frozenset({"etre", "avoir", "pouvoir", "savoir", "oser", "aller", "permettre", "vouloir", "devoir", "sembler", "faire", "arriver", "parvenir", "reussir"})
_AUXILIARY = frozenset("est sont etait etaient ete sera seront serait seraient soit fut a ont avait avaient aura aurait am is are was were be been being has have had".split())
_ENGLISH_AUX = frozenset("am is are was were be been being has have had".split())
_BE = frozenset("est sont etait etaient ete sera seront serait seraient soit fut am is are was were be been being".split())
_ADVERBS = frozenset("encore toujours vraiment jamais pas plus guere nullement point nulle part aucunement non yet really ever actually still never not nowhere".split())


def _bare_passive(words: list[str], start: int) -> bool:
    """Whether, from `start`, the clause is a negated passive of reporting with no agent: an auxiliary of
    `être`/`be` (after `avoir`/`have` too), then a participle of `_REPORT_STEMS`, or of
    `_REPORT_BARE_STEMS` with nothing after it (see their comments)."""
    seen_be = False
    for j in range(max(0, start), min(len(words), start + 7)):
        word = words[j]
        if word in _CLITICS or word in _ADVERBS or word == "ne":
            continue
        if word in _AUXILIARY:
            seen_be = seen_be or word in _BE
            continue
        return seen_be and _bare_participle(words, j)
    return False


def _bare_participle(words: list[str], at: int) -> bool:
    """Whether words[at] is a participle of reporting that, with what follows it, leaves the sources
    silent: a strong one unless a predicate or a non-source agent follows, a weak one only when bare."""
    if at >= len(words):
        return False
    word = words[at]
    tail = [w for w in words[at + 1 :] if w not in _TEXT_ADVERBS and w not in _ADVERBS]
    if _names_sources(words[at:]) or (tail and tail[0] in _INDIRECT | {"que", "that"}):
        return word.startswith(_REPORT_STEMS) or word.startswith(_REPORT_BARE_STEMS)  # "…précisé dans ses notes", "il n'est pas dit si…"
    if word.startswith(("indiqu", "indicat")) and tail and tail[0] in ("pour", "for"):
        return False  # "indiqué pour", "indicated for": recommended for, a fact of the world
    if word.startswith(_REPORT_STEMS):
        # "…précisée dans le contrat", "…documentée publiquement": a place that is not a source or a manner
        # completes a predicate of the world
        if not tail:
            return True
        return tail[0] not in _PREDICATIVE and tail[0] not in ("dans", "in", "within", "sur", "on", "selon") and not tail[0].endswith(("ment", "ly"))
    if word.startswith(_REPORT_BARE_STEMS):
        return not tail
    return False


def _hedge(words: list[str], at: int) -> bool:
    """Whether, after a word of difficulty at `at - 1`, an infinitive of knowing or saying leaves the
    question open: "difficile à dire", "difficile de savoir si…", "hard to tell from the notes"."""
    rest = [w for w in words[at : at + 6] if w not in _CLITICS or w == "a"]
    if len(rest) >= 3 and rest[0] in ("de", "to") and rest[1] in ("etre", "be") and any(w in ("precis", "precise", "sur", "sure", "certain", "affirmatif", "specific") for w in rest[2:4]):
        return True  # "Difficile d'être plus précis", "hard to be sure"
    if len(rest) < 2 or rest[0] not in ("a", "de", "to") or not rest[1].startswith(_KNOW_INFINITIVES):
        return False
    tail = rest[2:]
    return not tail or tail[0] in _INDIRECT or _names_sources(words[at:]) or tail[0] in ("plus", "davantage", "more", "exactly", "exactement", "precisement", "for", "pour", "avec", "with")


def _judge(words: list[str], subject: str, verbs: list[str], after: list[str], following: list[str], passive: bool = False) -> bool:
    """Whether a negated verb group is a frame of knowledge (see the module docstring). `subject` is the
    kind `_subject` gives; `verbs` the words of the verb group, `after` its participle or infinitive."""
    group = [*verbs, *after]
    if not group:
        return False
    head = group[0]
    if subject == "speaker":
        if _lemma(head) in ("pouvoir", "oser"):
            # "je ne peux pas vous le dire", "je ne pourrais pas en être sûr": its infinitive says what
            # (not a noun after it: "nous ne pouvons pas lire vos données")
            infinitive = [w for w in group[1:4] if w not in _ADVERBS][:2]
            return bool(infinitive) and (_is_know(infinitive[0]) or _is_state(infinitive[0]) or (_lemma(infinitive[0]) == "etre" and infinitive[1:] in (["sur"], ["certain"], ["sure"], ["precis"], ["affirmatif"], ["formel"], ["categorique"], ["specific"], ["precise"])))
        if _lemma(head) == "etre":
            # "je ne suis pas sûr", "je ne suis pas en mesure de le confirmer": what follows says what
            ability = next((w for w in group[1:4] if w in ("mesure", "capable", "able", "position")), None)
            if ability is not None and ability in words:
                at = words.index(ability)
                return any(_is_know(w) or _is_state(w) for w in words[at + 1 : at + 5] if w not in _CLITICS)
            return any(_is_know(w) or _is_state(w) or w in ("sur", "courant") for w in group[1:])
        return any(_is_know(w) for w in group[:2])
    if subject in ("source", "nobody"):
        absent = [k for k, w in enumerate(words) if w in _ABSENT_WORDS and w in following]
        if _lemma(head) == "avoir" and (any(w in _KNOWLEDGE_NOUNS for w in following) or any(_is_knowledge(words, k) for k in absent)):
            return True  # "il n'y a pas d'information", "les notes n'ont aucune précision", "there is no mention"
        if head.startswith(_TOPIC_STEMS) and (subject == "source" or _names_sources(words)):
            return True  # "Rien dans ce que j'ai ne concerne ce sujet", "ses notes ne touchent pas à…"
        if _lemma(head) == "etre" and group[1:2] and group[1] in ("dans", "in", "within") and _names_sources(words):
            return True  # "Cette information n'est pas dans mes notes", "That detail isn't in the notes"
        return any(_is_state(w) for w in group[:3])
    if subject == "il":
        # a demonstrative or `il`: a passive of stating ("il n'est pas précisé si", "it is not mentioned"),
        # or a clause that names the sources ("cela ne figure pas dans ses notes"); not with an agent that
        # is not a source ("il n'est pas précisé par le client…": the client said nothing, a fact)
        if head.startswith("exist") and any(w in _KNOWLEDGE_NOUNS for w in following) and not _has_agent(words):
            return True  # the impersonal "il n'existe aucune information", like "il n'y a pas"
        if _has_agent(words) or any(w in ("comme", "as") for w in words) or _world_complement(words, group):
            return False  # an agent, or a predicate: "ce n'est pas documenté comme une API stable"
        if _lemma(head) == "etre" and "question" in group[1:3] and ("nulle" in words or _names_sources(words)):
            return True  # "il n'est question nulle part de…", "il n'est pas question de… dans les notes"
        if passive and any(_is_state(w) for w in group[:2]):
            return True
        if _lemma(head) == "etre" and any(_is_state(w) for w in group[1:3]):
            return True
        return _names_sources(words) and (any(_is_state(w) for w in group[:3]) or _lemma(head) == "etre")
    # the missing fact as the subject, the sources named: a passive of stating ("L'algorithme n'est pas
    # documenté dans mes notes", "The amount is not stated in the notes I have") or a verb of being found
    # ("Sa date n'apparaît dans aucune note", "La date ne figure pas dans le contexte")
    if _names_sources(words):
        if (passive or _lemma(head) == "etre") and any(_is_state(w) for w in group[1:3] if _lemma(w) != "etre"):
            return True
        if (passive or _lemma(head) == "etre") and group[1:2] and group[1] in ("dans", "in", "within"):
            return True  # "Son salaire n'est pas dans les notes", "The date is not in my notes"
        if head.startswith(_APPEAR_STEMS) or (passive and any(_is_state(w) for w in group[:2])):
            return True
    # a verb of being recorded with nothing after it: "Sa date de naissance ne figure pas", "…ne figure
    # nulle part" (`figurer` is to appear in a text or a list; "apparaître" may be on a screen)
    return head.startswith("figur") and not [w for w in words[words.index(head) + 1 :] if w not in _TEXT_ADVERBS and w not in _ADVERBS]


def _english_verb_after(words: list[str], at: int) -> bool:
    """Whether an English auxiliary follows the negated noun at `at` with no verb of stating after it:
    "No technical details were made public" (a verb of the world), not "No details are given"."""
    aux = next((j for j in range(at + 2, min(len(words), at + 6)) if words[j] in _ENGLISH_AUX), None)
    return aux is not None and not any(_is_state(w) for w in words[aux + 1 : aux + 3])


def _world_complement(words: list[str], group: list[str]) -> bool:
    """Whether the participle of reporting in `group` is completed as a predicate of the world (the same
    reading as `_bare_participle`): "it is not indicated for beginners", "ce n'est pas indiqué sur le site"."""
    part = next((w for w in group[1:3] if w.startswith(_REPORT_STEMS) or w.startswith(_REPORT_BARE_STEMS)), None)
    return part is not None and part in words and not _bare_participle(words, words.index(part))


def _has_agent(words: list[str]) -> bool:
    """Whether the clause names an agent that is not a source: "précisé par le client", "stated by the
    vendor" (an agent that is a source, "par les notes", is one of `_names_sources`)."""
    return any(w in ("par", "by") for w in words) and not _names_sources(words)


@lru_cache(maxsize=4096)
def is_abstention(text: str) -> bool:
    """Whether `text` says the notes (or the speaker) do not hold the answer (see the module docstring)."""
    clauses = _clauses(text)
    return any(
        _frames(words) or (k and (_sans_after_source(clauses[k - 1], words) or _nothing_after_topic(clauses[k - 1], words)))
        for k, words in enumerate(clauses)
    )


def _nothing_after_topic(before: list[str], words: list[str]) -> bool:
    """A clause that is only "rien" / "nothing" after one that names a topic: "Sur ce point, rien.",
    "Quant à son salaire : rien", "About his salary, nothing"."""
    return words in (["rien"], ["nothing"], ["rien", "du", "tout"], ["nothing", "at", "all"]) and _is_topic(before)


def _sans_after_source(before: list[str], words: list[str]) -> bool:
    """A clause "sans en préciser…" / "without saying…" after one whose subject is a source: the source
    names a thing and leaves out its detail ("Ses notes évoquent un stage, sans en préciser la durée")."""
    if words[:1] not in (["sans"], ["without"]):
        return False
    verb = next((w for w in words[1:4] if w not in _CLITICS), "")
    return _is_state(verb) and _subject(before + ["ne"], min(len(before), 3)) == "source"
