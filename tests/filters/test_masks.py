"""The filter masks a chunk set keeps: one computation per distinct filter, shared, read-only, bounded."""

import numpy as np
import pytest

from dashrag.errors import FilterError
from dashrag.filters import MetadataColumns, document_mask, parse_filter
from dashrag.filters.masks import FilterMasks
from tests.filters.test_evaluate import DOCUMENTS

COLUMNS = MetadataColumns(DOCUMENTS)
DOCUMENT_INDEX = np.array([0, 0, 1, 2, 3, 3, 3, 4])  # chunk rows → documents (documents of several chunks)


def masks(capacity: int = 256) -> FilterMasks:
    return FilterMasks(COLUMNS, DOCUMENT_INDEX, capacity)


def test_a_filter_parsed_again_finds_the_mask_already_computed():
    kept = masks()
    first = kept.documents(parse_filter({"year": {"$gte": 2016}, "lang": {"$in": ["es", "de"]}}))
    again = kept.documents(parse_filter({"year": {"$gte": 2016}, "lang": {"$in": ["es", "de"]}}))
    assert again is first


def test_the_masks_are_the_filter_s_over_documents_and_over_rows():
    node = parse_filter({"$or": [{"tags": "bio"}, {"published": {"$lt": "2015-06-01"}}]})
    kept = masks()
    expected = document_mask(node, COLUMNS)
    assert kept.documents(node).tolist() == expected.tolist()
    assert kept.rows(node).tolist() == expected[DOCUMENT_INDEX].tolist()


def test_a_kept_mask_cannot_be_written():
    mask = masks().rows(parse_filter({"lang": "es"}))
    with pytest.raises(ValueError):
        mask[0] = False


def test_the_least_recently_used_filter_leaves_first():
    kept = masks(capacity=2)
    es, de, en = (parse_filter({"lang": value}) for value in ("es", "de", "en"))
    first_es, first_de = kept.documents(es), kept.documents(de)
    assert kept.documents(es) is first_es  # used again: now the most recent
    kept.documents(en)  # a third filter: "de", the least recent, leaves
    assert kept.documents(es) is first_es
    assert kept.documents(de) is not first_de  # computed anew


def test_a_filter_that_misfits_the_corpus_raises_each_time():
    kept = masks()
    for _ in range(2):
        with pytest.raises(FilterError, match="compares a string"):
            kept.documents(parse_filter({"year": "2015"}))
