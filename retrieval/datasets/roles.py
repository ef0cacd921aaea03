"""Captions -> semantic-role graphs (V, ARG0, ARG1, ARG2, ARGM-*) from spaCy's dependency parse.

Zhu, Bresson & Lim ("Semantic Role Aware Correlation Transformer for Text to Video
Retrieval") build a graph of sentence, verb and argument nodes from PropBank-style frames,
as HGR does (Chen et al., CVPR 2020, §3.1). No role-labelling model can be downloaded here,
so a verb's child takes the role :data:`ROLE_RULES` gives its (dependency, word), with the
exceptions of :func:`_role_of`. Spans are the child's subtree (a prepositional phrase from
its preposition); trailing temporal, directional or locative phrases the small parser
attaches low are lifted to the verb; coordinated verbs share subject and object; a noun
root that is a motion verb form (:data:`MOTION_FORMS`) or has an object is read as the verb;
a verbless caption's root noun phrase is an ``ENT`` node. Not ``config/roles.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MOTION_VERBS: frozenset[str] = frozenset(
    {
        "move", "roll", "slide", "drift", "rise", "float", "sink", "fall", "drop", "spin",
        "rotate", "turn", "grow", "expand", "shrink", "bounce", "hop", "jump", "sit", "stay",
        "fly", "run", "walk", "swim", "climb", "glide", "swing", "shake", "wobble", "travel",
    }
)  # fmt: skip
"""Motion verbs recognised in any inflection whatever spaCy's tag (its small model tags
"a disc rolls" as a noun phrase)."""


def _inflections(lemma: str) -> set[str]:
    stem = lemma[:-1] if lemma.endswith("e") else lemma
    forms = {lemma, lemma + "s", lemma + "es", stem + "ing", stem + "ed", lemma + "ed"}
    if lemma.endswith("y"):
        forms |= {lemma[:-1] + "ies", lemma[:-1] + "ied"}
    if (
        len(lemma) > 2
        and lemma[-1] not in "aeiouwy"
        and lemma[-2] in "aeiou"
        and lemma[-3] not in "aeiou"
    ):
        forms |= {lemma + lemma[-1] + "ing", lemma + lemma[-1] + "ed"}  # hop -> hopping
    return forms


_IRREGULAR = {
    "rose": "rise", "risen": "rise", "fell": "fall", "fallen": "fall", "sank": "sink",
    "sunk": "sink", "spun": "spin", "grew": "grow", "grown": "grow", "shrank": "shrink",
    "shrunk": "shrink", "sat": "sit", "flew": "fly", "flies": "fly", "ran": "run",
    "swam": "swim", "swung": "swing", "shook": "shake",
}  # fmt: skip
MOTION_FORMS: dict[str, str] = {
    **{form: lemma for lemma in MOTION_VERBS for form in _inflections(lemma)},
    **_IRREGULAR,
}
"""Inflected form -> lemma for :data:`MOTION_VERBS`."""


ARGM_LOC, ARGM_DIR, ARGM_MNR, ARGM_TMP = "ARGM-LOC", "ARGM-DIR", "ARGM-MNR", "ARGM-TMP"
ROLE_ORDER: tuple[str, ...] = (
    "V", "ARG0", "ARG1", "ARG2", ARGM_LOC, ARGM_DIR, ARGM_MNR, ARGM_TMP, "ARGM-NEG", "ENT",
)  # fmt: skip
"""Every role, in the order a frame lists them."""

_LOC_PREPOSITIONS = (
    "on", "in", "at", "over", "under", "against", "near", "behind", "beside", "inside",
    "above", "below", "between", "beneath", "among", "outside", "within", "next",
)  # fmt: skip
_DIR_PREPOSITIONS = (
    "into", "onto", "to", "toward", "towards", "past", "through", "across", "along", "from",
    "out", "off", "up", "down", "around", "round", "away",
)  # fmt: skip
_TMP_ADVERBS = (
    "then", "now", "again", "first", "later", "finally", "next", "afterwards", "meanwhile",
    "once", "soon", "already",
)  # fmt: skip
_DIR_ADVERBS = (
    "left", "right", "up", "down", "upward", "upwards", "downward", "downwards", "around",
    "away", "back", "in", "out", "forward", "forwards", "backward", "backwards", "inside",
    "outside", "home", "off", "over", "along",
)  # fmt: skip
ROLE_RULES: dict[tuple[str, str], str] = {
    **{(dep, "*"): "ARG0" for dep in ("nsubj", "csubj", "agent")},
    **{(dep, "*"): "ARG1" for dep in ("nsubjpass", "dobj", "xcomp", "ccomp")},
    **{(dep, "*"): "ARG2" for dep in ("dative", "attr", "acomp", "oprd")},
    **{("prep", word): ARGM_LOC for word in _LOC_PREPOSITIONS},
    **{("prep", word): ARGM_DIR for word in _DIR_PREPOSITIONS},
    **{("prep", word): ARGM_MNR for word in ("with", "by", "like", "without", "using")},
    **{("prep", word): ARGM_TMP for word in ("for", "during", "until", "after", "before")},
    **{("advmod", word): ARGM_TMP for word in _TMP_ADVERBS},
    **{("advmod", word): ARGM_DIR for word in _DIR_ADVERBS},
    **{("advmod", word): ARGM_LOC for word in ("here", "there", "nearby")},
    ("advmod", "*"): ARGM_MNR,
    ("prt", "*"): ARGM_DIR,
    **{("advcl", word): ARGM_TMP for word in ("while", "until", "when", "before", "after", "as")},
    ("neg", "*"): "ARGM-NEG",
}
"""(dependency, lower-cased word: the child, or for ``advcl`` its conjunction) -> role;
``"*"`` is any word."""
TIME_NOUNS: frozenset[str] = frozenset(
    {
        "second", "minute", "hour", "day", "night", "morning", "evening", "afternoon",
        "time", "moment", "while", "week", "year", "end", "beginning", "start",
    }
)  # fmt: skip
"""Lemmas whose prepositional phrase is ARGM-TMP whatever the preposition ("at night")."""
COPULAS: frozenset[str] = frozenset({"be", "become", "get", "seem", "remain", "look", "appear"})
"""Verbs whose subject is a theme (ARG1) and whose complement is ARG2 ("gets smaller")."""
CLAUSE_DEPENDENCIES: frozenset[str] = frozenset(
    {"ROOT", "conj", "advcl", "xcomp", "ccomp", "relcl", "pcomp", "parataxis", "csubj"}
)
"""Dependencies under which a verb heads a clause of its own and so a frame."""
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj"})
_LIFTABLE_ANYWHERE = frozenset({ARGM_TMP, ARGM_DIR})
_CORE_PREDICATES = frozenset({"attr", "acomp", "oprd"})
_NOMINAL_OBJECTS = frozenset({"dobj", "dative"})


@dataclass(frozen=True)
class RoleNode:
    """A node of a role graph (the sentence, a verb or an argument span), with token and
    character offsets in the caption."""

    index: int
    kind: str
    text: str
    start: int
    end: int
    start_char: int
    end_char: int


@dataclass(frozen=True)
class RoleEdge:
    """An edge labelled with a role: sentence -> verb ("V"), verb -> argument (ARG0, ...)."""

    source: int
    target: int
    role: str


@dataclass(frozen=True)
class RoleGraph:
    """One caption's role graph; node 0 is the sentence, verbs and arguments in text order."""

    text: str
    nodes: tuple[RoleNode, ...]
    edges: tuple[RoleEdge, ...]

    def verbs(self) -> list[RoleNode]:
        return [node for node in self.nodes if node.kind == "verb"]

    def arguments(self) -> list[RoleNode]:
        return [node for node in self.nodes if node.kind == "argument"]


@dataclass(frozen=True)
class _Argument:
    role: str
    start: int
    end: int


def _is_punct(token: Any) -> bool:
    return token.is_punct or token.dep_ in ("punct", "cc")


def _trimmed(doc: Any, start: int, end: int) -> tuple[int, int]:
    while start < end and _is_punct(doc[start]):
        start += 1
    while end > start and _is_punct(doc[end - 1]):
        end -= 1
    return start, end


def _is_predicate(token: Any) -> bool:
    """A verb heading a clause, or a noun root the small parser made of a verb."""
    clause = token.pos_ in ("VERB", "AUX") and token.dep_ in CLAUSE_DEPENDENCIES
    return clause or _is_misparsed_verb(token)


def _is_misparsed_verb(token: Any) -> bool:
    if token.dep_ != "ROOT" or token.pos_ not in ("NOUN", "PROPN", "ADJ"):
        return False
    has_object = any(child.dep_ == "dobj" for child in token.children)
    return token.text.lower() in MOTION_FORMS or has_object


def _child_word(token: Any, dep: str, attribute: str = "text") -> str:
    """The lower-cased ``attribute`` (``text``, ``lemma_``) of the first ``dep`` child, or ""."""
    child = next((child for child in token.children if child.dep_ == dep), None)
    return "" if child is None else getattr(child, attribute).lower()


def _role_of(child: Any, *, has_object: bool, copula: bool, existential: bool) -> str:
    """The role of a verb's ``child`` by :data:`ROLE_RULES`, except that a copula's subject
    and an existential's ``attr`` are ARG1, a time noun's phrase is ARGM-TMP ("at night")
    and "to" beside a direct object is ARG2 ("add the onions to the pan")."""
    dep = child.dep_
    if dep == "advcl":
        return ROLE_RULES.get((dep, _child_word(child, "mark")), "")
    if dep == "nsubj" and copula:
        return "ARG1"
    if dep == "attr" and existential:
        return "ARG1"
    if dep == "prep" and _child_word(child, "pobj", "lemma_") in TIME_NOUNS:
        return ARGM_TMP
    word = child.text.lower()
    if dep == "prep" and word == "to" and has_object:
        return "ARG2"
    return ROLE_RULES.get((dep, word)) or ROLE_RULES.get((dep, "*"), "")


def _span(child: Any, role: str) -> tuple[int, int]:
    """The child's subtree; a prepositional phrase starts at its preposition."""
    start = child.left_edge.i
    if child.dep_ in ("prep", "agent") or (child.dep_ == "prt" and role == ARGM_DIR):
        start = child.i
    return start, child.right_edge.i + 1


def _split_trailing(
    doc: Any, argument: _Argument, head: Any, *, locative: bool
) -> tuple[_Argument, _Argument | None]:
    """``argument`` without a trailing modifier phrase the parser attached inside it, and that
    phrase (a temporal or directional one; a locative one too with ``locative``)."""
    for token in doc[argument.start : argument.end]:
        if token.dep_ != "prep" or token.i == head.i or token.right_edge.i + 1 != argument.end:
            continue
        time = _child_word(token, "pobj", "lemma_") in TIME_NOUNS
        role = ARGM_TMP if time else _PREP_ROLES.get(token.lower_, "")
        if role in _LIFTABLE_ANYWHERE or (role == ARGM_LOC and locative):
            rest = _Argument(argument.role, *_trimmed(doc, argument.start, token.i))
            return rest, _Argument(role, token.i, argument.end)
        break
    return argument, None


_PREP_ROLES = {word: role for (dep, word), role in ROLE_RULES.items() if dep == "prep"}


def _arguments(doc: Any, verb: Any) -> list[_Argument]:
    """The verb's own arguments (before coordination), lifted phrases split off."""
    children = list(verb.children)
    has_object = any(child.dep_ in ("dobj", "dative") for child in children)
    copula = verb.lemma_.lower() in COPULAS
    existential = any(child.dep_ == "expl" for child in children)
    misparsed = _is_misparsed_verb(verb)
    arguments: list[_Argument] = []
    if misparsed:
        left = [child for child in children if child.i < verb.i]
        if left:
            arguments.append(_Argument("ARG0", left[0].left_edge.i, verb.i))
        children = [child for child in children if child.i > verb.i]
    predicate_filled = any(child.dep_ in _CORE_PREDICATES for child in children)
    for child in children:
        role = _role_of(child, has_object=has_object, copula=copula, existential=existential)
        if copula and not predicate_filled and child.dep_ == "prep" and role != ARGM_TMP:
            role, predicate_filled = "ARG2", True
        if not role:
            continue
        start, end = _span(child, role)
        if child.dep_ == "prep":
            for modifier in (c for c in child.children if c.i < child.i):
                modifier_role = ROLE_RULES.get(("advmod", modifier.lower_), ARGM_MNR)
                arguments.append(_Argument(modifier_role, *_span(modifier, modifier_role)))
        argument = _Argument(role, *_trimmed(doc, start, end))
        if argument.start > verb.i:
            locative = child.dep_ not in _NOMINAL_OBJECTS
            argument, lifted = _split_trailing(doc, argument, child, locative=locative)
            arguments.extend([argument] if lifted is None else [argument, lifted])
        else:
            arguments.append(argument)
    return arguments


def _coordinated(verbs: list[Any], own: dict[int, list[_Argument]]) -> None:
    """Share the subject (and, for "peel and chop X", the object) across conjoined verbs."""
    for verb in verbs:
        if verb.dep_ != "conj" or verb.head.i not in own:
            continue
        head_arguments = own[verb.head.i]
        has_subject = any(child.dep_ in _SUBJECTS for child in verb.children)
        if not has_subject:
            subjects = [
                a for a in head_arguments if a.start < verb.head.i and a.role in ("ARG0", "ARG1")
            ]
            own[verb.i] = subjects[:1] + own[verb.i]
        head_right = [c for c in verb.head.children if c.i > verb.head.i]
        if all(c.dep_ in ("cc", "conj", "punct") for c in head_right):
            objects = [a for a in own[verb.i] if a.role == "ARG1" and a.start > verb.i]
            head_arguments.extend(objects[:1])


def _nominal(doc: Any) -> list[_Argument]:
    """A verbless caption's root noun phrase (ENT) and its prepositional modifiers."""
    arguments: list[_Argument] = []
    for root in (token for token in doc if token.dep_ == "ROOT"):
        end = root.right_edge.i + 1
        for child in (c for c in root.children if c.i > root.i and c.dep_ == "prep"):
            role = _PREP_ROLES.get(child.lower_, "")
            if role:
                end = min(end, child.i)
                arguments.append(_Argument(role, *_trimmed(doc, *_span(child, role))))
        entity = _Argument("ENT", *_trimmed(doc, root.left_edge.i, end))
        entity, lifted = _split_trailing(doc, entity, root, locative=True)
        arguments[:0] = [entity] if lifted is None else [entity, lifted]
    return arguments


def role_graph(doc: Any) -> RoleGraph:
    """The role graph of one parsed caption (a spaCy ``Doc``)."""
    verbs = [token for token in doc if _is_predicate(token)]
    own = {verb.i: _arguments(doc, verb) for verb in verbs}
    _coordinated(verbs, own)

    def node(index: int, kind: str, start: int, end: int) -> RoleNode:
        span = doc[start:end]
        return RoleNode(
            index, kind, span.text, start, end, span.start_char, span.start_char + len(span.text)
        )

    nodes = [node(0, "sentence", 0, len(doc))]
    edges: list[RoleEdge] = []
    spans: dict[tuple[int, int], int] = {}

    def argument_node(argument: _Argument) -> int:
        key = (argument.start, argument.end)
        if key not in spans:
            spans[key] = len(nodes)
            nodes.append(node(len(nodes), "argument", *key))
        return spans[key]

    for verb in verbs:
        verb_index = len(nodes)
        nodes.append(node(verb_index, "verb", verb.i, verb.i + 1))
        edges.append(RoleEdge(0, verb_index, "V"))
        for argument in sorted(own[verb.i], key=lambda a: a.start):
            if argument.end > argument.start:
                edges.append(RoleEdge(verb_index, argument_node(argument), argument.role))
    if not verbs:
        for argument in _nominal(doc):
            if argument.end > argument.start:
                edges.append(RoleEdge(0, argument_node(argument), argument.role))
    return RoleGraph(doc.text, tuple(nodes), tuple(edges))


def role_graphs(
    captions: Sequence[str | Any], *, nlp: Any, batch_size: int = 256
) -> list[RoleGraph]:
    """Role graphs of captions (strings, parsed with ``nlp.pipe``, or spaCy ``Doc``\\ s);
    the caller passes ``nlp`` so that this module needs neither Django nor torch."""
    unique = list(dict.fromkeys(caption for caption in captions if isinstance(caption, str)))
    docs = nlp.pipe(unique, batch_size=batch_size) if unique else ()
    parsed = dict(zip(unique, docs, strict=True))
    return [role_graph(parsed[c] if isinstance(c, str) else c) for c in captions]


def frames(graph: RoleGraph) -> list[dict[str, str]]:
    """One ``{"V": ..., "ARG0": ..., ...}`` per verb in text order, roles in :data:`ROLE_ORDER`;
    a role held twice lists both spans joined by "; "."""
    result = []
    for verb in graph.verbs():
        spans: dict[str, list[str]] = {"V": [verb.text]}
        for edge in graph.edges:
            if edge.source == verb.index:
                spans.setdefault(edge.role, []).append(graph.nodes[edge.target].text)
        result.append({role: "; ".join(spans[role]) for role in ROLE_ORDER if role in spans})
    return result


@dataclass(frozen=True)
class RoleScore:
    """Exact-span precision and recall of one role over a labelled set."""

    role: str
    true_positives: int
    predicted: int
    expected: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.expected if self.expected else 0.0

    @property
    def f1(self) -> float:
        total = self.predicted + self.expected
        return 2 * self.true_positives / total if total else 0.0


def _triples(frame_lists: Sequence[Sequence[dict[str, str]]]) -> set[tuple[int, str, str, str]]:
    """(caption, verb, role, span) for every span; "V" is scored as (caption, verb, "V", verb)."""
    triples = set()
    for number, caption_frames in enumerate(frame_lists):
        for frame in caption_frames:
            for role, text in frame.items():
                for span in text.split("; "):
                    triples.add((number, frame["V"], role, span))
    return triples


def score_frames(
    predicted: Sequence[Sequence[dict[str, str]]], expected: Sequence[Sequence[dict[str, str]]]
) -> list[RoleScore]:
    """Per-role exact-match scores of predicted against hand-labelled frames, plus "all": a
    span counts when the same caption's frame with the same verb has it in the same role."""
    every = _triples(predicted), _triples(expected)
    scores = []
    for role in (*ROLE_ORDER[:-1], "all"):
        found, wanted = ({t for t in triples if role in ("all", t[2])} for triples in every)
        if role == "all" or found or wanted:
            scores.append(RoleScore(role, len(found & wanted), len(found), len(wanted)))
    return scores


def role_spans(graph: RoleGraph) -> list[tuple[int, int, str]]:
    """Non-overlapping ``(start_char, end_char, role)`` of the caption's verbs and arguments
    in text order, for the judging page (FIRE: every element counts); where spans overlap
    the earlier, then the longer, wins."""
    roles_by_node: dict[int, str] = {}
    for edge in graph.edges:
        roles_by_node.setdefault(edge.target, edge.role)
    candidates = sorted(
        (node.start_char, -node.end_char, roles_by_node.get(node.index, ""))
        for node in graph.nodes
        if node.kind != "sentence" and node.index in roles_by_node
    )
    spans: list[tuple[int, int, str]] = []
    for start, negative_end, role in candidates:
        if spans and start < spans[-1][1]:
            continue
        spans.append((start, -negative_end, role))
    return spans
