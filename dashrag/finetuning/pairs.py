"""Judged (query, document) pairs from a BEIR split, a seeded dev slice, and the test-split guard.

Training reads a split's qrels: every pair judged relevant (grade > 0) whose document is in the
corpus is one training example. A *dev slice* of the split's queries (a seeded fraction) is held
out of training: the model card reports figures on it, and the pipeline tunes the tree on it, so
no figure that chooses anything is measured on queries the model was trained on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Mapping

from dashrag.documents.corpus import Corpus, full_text
from dashrag.errors import ConfigError, ConfigIssue, CorpusError
from dashrag.evaluation.beir import EvaluationSplit

PROTECTED_SPLIT = "test"


def refuse_test_split(split: str, force: bool, option: str = "--split") -> None:
    """A split named ``test`` is the final figure's: nothing trains or tunes on it unless forced."""
    if split.strip().lower() == PROTECTED_SPLIT and not force:
        raise ConfigError([ConfigIssue(option, f"is the {PROTECTED_SPLIT!r} split: it is kept for the final "
                                               "figure; train and tune on another split (or pass --force-test)")])


@dataclass(frozen=True)
class JudgedPair:
    """One training example: a query and a document judged relevant to it (its indexed text)."""

    query_id: str
    query: str
    document_id: str
    document: str
    grade: int  # the judgement as given (BEIR: 1 relevant, 2 highly relevant): training takes the highest first


def sub_split(split: EvaluationSplit, query_ids: list[str], name: str) -> EvaluationSplit:
    """The queries ``query_ids`` of ``split`` (qrels and texts), in that order, named ``name``."""
    return EvaluationSplit(dataset=split.dataset, split=name, queries={q: split.queries[q] for q in query_ids},
                           qrels={q: split.qrels[q] for q in query_ids})


def carve_dev(split: EvaluationSplit, fraction: float, seed: int,
              option: str = "--dev-fraction") -> tuple[EvaluationSplit, EvaluationSplit | None]:
    """(the queries to train on, the held-out dev slice or None): a seeded shuffle, so a rerun holds
    out the same queries. A fraction that leaves no query on either side is an error naming ``option``."""
    if fraction < 0 or fraction >= 1:
        raise ConfigError([ConfigIssue(option, f"must be in [0, 1), not {fraction}")])
    ids = list(split.queries)
    if fraction == 0:
        return split, None
    shuffled = sorted(ids)
    random.Random(seed).shuffle(shuffled)
    n_dev = round(len(ids) * fraction)
    if n_dev == 0 or n_dev == len(ids):
        raise ConfigError([ConfigIssue(option, f"{fraction} of {len(ids)} queries leaves "
                                                          f"{'no dev' if n_dev == 0 else 'no training'} query")])
    dev = set(shuffled[:n_dev])
    return (sub_split(split, [q for q in ids if q not in dev], f"{split.split}-fit"),
            sub_split(split, [q for q in ids if q in dev], f"{split.split}-dev"))


def judged_pairs(split: EvaluationSplit, documents: Mapping[str, str]) -> list[JudgedPair]:
    """Every relevant (grade > 0) pair of ``split`` whose document is in ``documents`` (id → indexed text),
    in qrels order, with its grade; a split with none is an error naming it."""
    pairs = [
        JudgedPair(query_id, split.queries[query_id], document_id, documents[document_id], grade)
        for query_id, judged in split.qrels.items()
        for document_id, grade in judged.items()
        if grade > 0 and document_id in documents
    ]
    if not pairs:
        raise CorpusError(f"{split.dataset} split {split.split!r}: no query is judged relevant to a document "
                          "of the corpus, so there is nothing to train on")
    return pairs


def document_texts(corpus: Corpus) -> dict[str, str]:
    """Each document's indexed text (``title + "\\n\\n" + text``, as the retrievers see it), by id."""
    return {document.id: full_text(document) for document in corpus}
