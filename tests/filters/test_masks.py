"""The filter masks a chunk set keeps: one computation per distinct filter, shared, read-only, bounded."""

import numpy as np
import pytest

from dashrag.errors import FilterError
from dashrag.filters import MetadataColumns, document_mask, parse_filter
from dashrag.filters.ast import node_count
from dashrag.filters.masks import FilterMasks
from tests.filters.test_evaluate import DOCUMENTS

COLUMNS = MetadataColumns(DOCUMENTS)
DOCUMENT_INDEX = np.array([0, 0, 1, 2, 3, 3, 3, 4])  # chunk rows → documents (documents of several chunks)


def masks(capacity: int = 256, max_nodes: int = 16_384) -> FilterMasks:
    return FilterMasks(COLUMNS, DOCUMENT_INDEX, capacity, max_nodes)


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


def years(first: int, terms: int):
    """An ``$or`` of ``terms`` years from ``first``: ``terms + 1`` nodes."""
    return parse_filter({"$or": [{"year": y} for y in range(first, first + terms)]})


def test_node_count_counts_every_node_and_an_in_as_one():
    assert node_count(years(2000, 999)) == 1000
    assert node_count(parse_filter({"lang": {"$nin": ["es", "de"]}, "year": {"$gte": 2016}})) == 4  # And, Not(In), ...


def test_the_filters_kept_are_bounded_by_their_nodes_too_the_least_recent_leave_first():
    # why: each kept node is objects the garbage collector walks again at every full collection (filters/masks.py)
    kept = masks(max_nodes=2_500)
    first, second, third = years(1000, 999), years(3000, 999), years(5000, 999)  # 1,000 nodes each
    computed = [kept.documents(f) for f in (first, second)]
    assert kept.documents(first) is computed[0]  # both fit: 2,000 nodes; "first" now the most recent
    kept.documents(third)  # 3,000 nodes: the least recent ("second") leaves
    assert kept.documents(first) is computed[0]
    assert kept.documents(second) is not computed[1]  # computed anew
    assert kept.documents(second).tolist() == computed[1].tolist()


def test_a_filter_larger_than_the_node_bound_is_answered_and_not_kept():
    kept = masks(max_nodes=100)
    large = years(1000, 200)
    assert kept.documents(large).tolist() == document_mask(large, COLUMNS).tolist()
    assert kept.documents(large) is not kept.documents(large)


def test_a_filter_that_misfits_the_corpus_raises_each_time():
    kept = masks()
    for _ in range(2):
        with pytest.raises(FilterError, match="compares a string"):
            kept.documents(parse_filter({"year": "2015"}))
