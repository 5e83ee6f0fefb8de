"""Pseudo-queries from a document's own structure: training pairs for a corpus nobody judged.

A user rarely has relevance judgements; they have documents. Each document already says what it
is about in places a searcher's words resemble: its title, its headings, the first sentence of a
section, any one of its sentences (the *inverse cloze* task: a sentence is a query for the text it
was taken from). Each such query is paired with the document it came from, tagged with its source
(so a report can say what each source is worth), and its *positive* is the document's indexed text
with the query's own words removed: a model trained to match a title against a text that still
holds the title learns to copy, not to retrieve.

Everything here is a pure function of the documents and a seed: the same corpus and seed give the
same queries in the same order, whatever else ran before (each document draws from its own
``random.Random`` seeded by the seed and the document id).

Sentences are split on Unicode's ``Sentence_Terminal`` characters (``.``, ``?``, ``!``, ``。``,
``！``, ``؟``, ``।``, ...) rather than on English rules: a terminal ends a sentence when whitespace or
the end follows (so ``3.14`` and ``e.g.x`` stay whole), and the full-width terminals of Chinese and
Japanese end one even with no space after, as those scripts write none. Abbreviations followed by a
space (``e.g. this``) do split: a short fragment is then too short to be a query and is skipped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, Iterator

import regex

from dashrag.documents.corpus import full_text
from dashrag.documents.model import SourceDocument
from dashrag.errors import ConfigError, ConfigIssue
from dashrag.evaluation.beir import EvaluationSplit

TITLE = "title"
HEADING = "heading"
HELD_OUT_SENTENCE = "held_out_sentence"  # inverse cloze
SECTION_OPENING = "section_opening"
SOURCES = (TITLE, HEADING, HELD_OUT_SENTENCE, SECTION_OPENING)

MIN_WORD_CHARACTERS = 6  # fewer letters/digits than this is a fragment ("e.g.", "Fig. 2"), not a query
SECTION_METADATA = "section"  # a converted file's section name (PDF/HTML converters write it)

_SENTENCE_END = regex.compile(r"(?<=\p{Sentence_Terminal}[\p{Pe}\p{Pf}\"']*)\s+|(?<=[。！？｡])")
_HEADING_LINE = regex.compile(r"^[ ]{0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_WORD_CHARACTER = regex.compile(r"\w")
_SPACES = regex.compile(r"[ \t]+")
_PARAGRAPH_BREAK = regex.compile(r"\n[ \t]*\n")
_BARE_HEADING_MARK = regex.compile(r"^#+$")


@dataclass(frozen=True)
class PseudoQuery:
    """One training example made from a document: the query, where it came from, what it should find."""

    query: str
    document_id: str
    source: str  # one of SOURCES
    positive: str  # the document's indexed text without the query's own words


@dataclass(frozen=True)
class Section:
    """A stretch of a document under one heading (``heading`` empty before the first one)."""

    heading: str
    body: str


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (any script), each stripped, empty ones dropped. A blank line ends a sentence
    (a paragraph never runs into the next); a single line break does not (hard-wrapped text is one paragraph)."""
    return [sentence.strip()
            for paragraph in _PARAGRAPH_BREAK.split(text)
            for sentence in _SENTENCE_END.split(" ".join(paragraph.split("\n")))
            if sentence.strip()]


def sections(text: str) -> list[Section]:
    """``text`` cut at its markdown ATX headings (``#`` to ``######``); text before the first heading is a
    section without one. A text without headings is one section."""
    found: list[Section] = []
    heading, body = "", []  # type: str, list[str]
    for line in text.splitlines():
        match = _HEADING_LINE.match(line)
        if match is None:
            body.append(line)
            continue
        found.append(Section(heading, "\n".join(body).strip()))
        heading, body = match.group(2).strip(), []
    found.append(Section(heading, "\n".join(body).strip()))
    return [s for s in found if s.heading or s.body]


def informative(query: str) -> bool:
    """Whether ``query`` holds enough letters or digits to be searched for (any script: CJK characters count)."""
    return len(_WORD_CHARACTER.findall(query)) >= MIN_WORD_CHARACTERS


def without(text: str, span: str) -> str:
    """``text`` with the first occurrence of ``span`` removed (matched across any whitespace, as
    ``split_sentences`` joins a hard-wrapped line), the gap it leaves on its line closed, and a heading's ``#``
    marks left alone on their line dropped. Later occurrences stay: a body that repeats its heading's words is
    what real queries meet too; only the copy the query was taken from goes."""
    pattern = regex.compile(r"\s+".join(regex.escape(word) for word in span.split()))
    lines = (_SPACES.sub(" ", line).strip() for line in pattern.sub("", text, count=1).splitlines())
    return "\n".join(line for line in lines if not _BARE_HEADING_MARK.match(line)).strip()


def headings(document: SourceDocument) -> list[str]:
    """The document's headings: its markdown headings, then a converted file's ``section`` metadata (when a
    string not already among them)."""
    found = [s.heading for s in sections(document.text) if s.heading]
    section = document.metadata.get(SECTION_METADATA)
    if isinstance(section, str) and section.strip() and section.strip() not in found:
        found.append(section.strip())
    return found


def section_openings(document: SourceDocument) -> list[str]:
    """The first sentence of each section that has more after it (an opening alone would leave no positive)."""
    openings = []
    for section in sections(document.text):
        sentences = split_sentences(section.body)
        if len(sentences) > 1:
            openings.append(sentences[0])
    return openings


def held_out_sentence(document: SourceDocument, rng: random.Random, taken: set[str]) -> str | None:
    """One sentence of the body drawn with ``rng`` among those long enough and not already a query
    (``taken``); None when the body has fewer than two sentences (nothing would be left to find)."""
    body = [line for line in document.text.splitlines() if _HEADING_LINE.match(line) is None]
    sentences = split_sentences("\n".join(body))
    if len(sentences) < 2:
        return None
    candidates = [s for s in sentences if informative(s) and s not in taken]
    return rng.choice(candidates) if candidates else None


def document_queries(document: SourceDocument, seed: int) -> list[PseudoQuery]:
    """Every pseudo-query of one document, in the order of SOURCES; duplicates and fragments left out."""
    rng = random.Random(f"{seed}:{document.id}")
    text = full_text(document)  # what the retrievers index
    drafted: list[tuple[str, str]] = []
    if document.title.strip():
        drafted.append((TITLE, document.title.strip()))
    drafted.extend((HEADING, heading) for heading in headings(document))
    openings = section_openings(document)
    sentence = held_out_sentence(document, rng, set(openings))
    if sentence is not None:
        drafted.append((HELD_OUT_SENTENCE, sentence))
    drafted.extend((SECTION_OPENING, opening) for opening in openings)
    queries: list[PseudoQuery] = []
    seen: set[str] = set()
    for source, query in drafted:
        if query in seen or not informative(query):
            continue
        seen.add(query)
        positive = without(text, query)
        if informative(positive):
            queries.append(PseudoQuery(query, document.id, source, positive))
    return queries


def pseudo_queries(documents: Iterable[SourceDocument], seed: int = 42,
                   sources: Iterable[str] = SOURCES) -> list[PseudoQuery]:
    """The pseudo-queries of every document, from the chosen ``sources`` only, document by document."""
    chosen = set(chosen_sources(sources))
    return [q for document in documents for q in document_queries(document, seed) if q.source in chosen]


def chosen_sources(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as a tuple, checked: at least one, each among SOURCES (the error names ``--sources``)."""
    chosen = tuple(names)
    unknown = sorted(set(chosen) - set(SOURCES))
    if unknown or not chosen:
        raise ConfigError([ConfigIssue("--sources", f"{', '.join(unknown) or 'none'}: unknown or no pseudo-query "
                                                    f"source; known: {', '.join(SOURCES)}")])
    return chosen


def query_ids(queries: Iterable[PseudoQuery]) -> Iterator[str]:
    """A stable id per query: its source, its document and its rank among that document's queries of the source."""
    counts: dict[tuple[str, str], int] = {}
    for query in queries:
        key = (query.source, query.document_id)
        counts[key] = counts.get(key, 0) + 1
        yield f"{query.source}:{query.document_id}:{counts[key]}"


def pseudo_split(queries: list[PseudoQuery], dataset: str, name: str = "pseudo") -> EvaluationSplit:
    """The queries as a judged split (each relevant to its own document, grade 1): what the judged pipeline's
    dev slice, pair assembly and evaluation read, so learning without judgements reuses them whole."""
    ids = list(query_ids(queries))
    return EvaluationSplit(dataset=dataset, split=name,
                           queries={i: q.query for i, q in zip(ids, queries)},
                           qrels={i: {q.document_id: 1} for i, q in zip(ids, queries)})


__all__ = ["HEADING", "HELD_OUT_SENTENCE", "SECTION_OPENING", "SOURCES", "TITLE", "PseudoQuery", "Section",
           "chosen_sources", "document_queries", "pseudo_queries", "pseudo_split", "sections", "split_sentences"]
