"""Pseudo-queries from a document's own structure: each source, documents without structure, other scripts, seeds."""

from __future__ import annotations

import pytest

from dashrag.documents.model import SourceDocument
from dashrag.errors import ConfigError
from dashrag.finetuning.pseudo_queries import (
    HEADING,
    HELD_OUT_SENTENCE,
    SECTION_OPENING,
    TITLE,
    document_queries,
    pseudo_queries,
    pseudo_split,
    split_sentences,
)

WHALES = SourceDocument(
    "whales",
    "Blue whales are the largest animals ever known. They live in every ocean.\n"
    "# Feeding habits\n"
    "Whales eat krill in cold waters. They filter water through baleen plates.\n"
    "## Migration routes\n"
    "They migrate thousands of kilometres each year. The routes follow the seasons.",
    title="The blue whale",
)
PLAIN = SourceDocument("plain",
                       "Copper conducts electricity well. Silver conducts it even better. Gold does not corrode.")


def by_source(document: SourceDocument, seed: int = 42) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for query in document_queries(document, seed):
        found.setdefault(query.source, []).append(query.query)
    return found


def test_the_title_is_a_query_and_its_positive_is_the_text_without_it():
    [title] = [q for q in document_queries(WHALES, 42) if q.source == TITLE]
    assert title.query == "The blue whale"
    assert title.document_id == "whales"
    assert "The blue whale" not in title.positive
    assert "Blue whales are the largest animals ever known." in title.positive


def test_every_markdown_heading_is_a_query():
    assert by_source(WHALES)[HEADING] == ["Feeding habits", "Migration routes"]


def test_a_converted_files_section_metadata_is_a_heading_query():
    converted = SourceDocument("pdf", PLAIN.text, metadata={"section": "Properties of metals"})
    assert by_source(converted)[HEADING] == ["Properties of metals"]


def test_the_first_sentence_of_each_section_is_a_query():
    assert by_source(WHALES)[SECTION_OPENING] == ["Blue whales are the largest animals ever known.",
                                                  "Whales eat krill in cold waters.",
                                                  "They migrate thousands of kilometres each year."]


def test_the_held_out_sentence_is_removed_from_its_positive_and_is_no_section_opening():
    [query] = [q for q in document_queries(WHALES, 42) if q.source == HELD_OUT_SENTENCE]
    assert query.query in WHALES.text
    assert query.query not in query.positive
    assert query.query not in by_source(WHALES)[SECTION_OPENING]


def test_a_document_without_title_or_headings_gives_sentence_queries_only():
    found = by_source(PLAIN)
    assert set(found) == {HELD_OUT_SENTENCE, SECTION_OPENING}
    assert found[SECTION_OPENING] == ["Copper conducts electricity well."]
    assert found[HELD_OUT_SENTENCE][0] in {"Silver conducts it even better.", "Gold does not corrode."}


def test_a_one_sentence_document_without_title_gives_no_query():
    assert document_queries(SourceDocument("one", "Only one sentence here."), 42) == []


def test_spanish_sentences_split_on_inverted_and_closing_marks():
    assert split_sentences("¿Qué come la ballena azul? Come kril en aguas frías. ¡Es enorme!") == [
        "¿Qué come la ballena azul?", "Come kril en aguas frías.", "¡Es enorme!"]


def test_cjk_sentences_split_without_spaces_and_decimals_stay_whole():
    assert split_sentences("東京は日本の首都です。大阪は大きな商業都市です！Pi is 3.14 exactly.") == [
        "東京は日本の首都です。", "大阪は大きな商業都市です！", "Pi is 3.14 exactly."]


def test_a_japanese_document_gives_its_title_and_sentences():
    document = SourceDocument("jp", "東京は日本の首都です。人口は千四百万人を超えています。"
                                    "多くの企業が本社を置いています。", title="東京都の概要について")
    found = by_source(document)
    assert found[TITLE] == ["東京都の概要について"]
    assert found[SECTION_OPENING] == ["東京は日本の首都です。"]
    assert found[HELD_OUT_SENTENCE][0] in {"人口は千四百万人を超えています。", "多くの企業が本社を置いています。"}


def test_the_same_seed_gives_the_same_queries_whatever_the_document_order():
    forward = pseudo_queries([WHALES, PLAIN], seed=3)
    backward = pseudo_queries([PLAIN, WHALES], seed=3)
    assert sorted(forward, key=repr) == sorted(backward, key=repr)
    assert pseudo_queries([WHALES, PLAIN], seed=3) == forward


def test_another_seed_can_hold_out_another_sentence():
    long = SourceDocument("long", " ".join(f"Sentence number {n} talks about topic {n}." for n in range(30)))
    held = {q.query for seed in range(10) for q in document_queries(long, seed) if q.source == HELD_OUT_SENTENCE}
    assert len(held) > 1


def test_only_the_chosen_sources_are_made_and_an_unknown_one_is_refused():
    assert {q.source for q in pseudo_queries([WHALES], sources=[TITLE])} == {TITLE}
    with pytest.raises(ConfigError, match="--sources.*summary: unknown"):
        pseudo_queries([WHALES], sources=["summary"])


def test_the_pseudo_split_judges_each_query_relevant_to_its_own_document():
    queries = pseudo_queries([WHALES, PLAIN], seed=1)
    split = pseudo_split(queries, "mine")
    assert len(split) == len(queries)
    assert list(split.queries.values()) == [q.query for q in queries]
    assert [next(iter(judged)) for judged in split.qrels.values()] == [q.document_id for q in queries]


def test_a_hard_wrapped_paragraph_is_one_text_and_a_blank_line_ends_a_sentence():
    assert split_sentences("Term frequency saturates: the tenth\noccurrence adds less. Then k1\ncontrols it\n\n"
                           "A new paragraph") == ["Term frequency saturates: the tenth occurrence adds less.",
                                                  "Then k1 controls it", "A new paragraph"]


def test_a_held_out_sentence_wrapped_over_two_lines_is_removed_from_its_positive():
    wrapped = SourceDocument("wrapped", "The parameter k1 controls how fast\nterm frequency saturates. "
                                        "The parameter b controls\nlength normalisation strength.")
    for seed in range(6):
        [query] = [q for q in document_queries(wrapped, seed) if q.source == HELD_OUT_SENTENCE]
        assert query.query.split()[-1] not in query.positive
