"""The garbage-collection pause around batches: scoped, restoring, still freeing cycles."""

import gc
import weakref

import pytest

import dashrag
from dashrag.core.collection import young_garbage_only


class Node:
    self: "Node | None" = None


def unreferenced_cycle() -> weakref.ref:
    """A weak reference to a node that refers to itself and to nothing else: only the cyclic collector frees it."""
    cycle = Node()
    cycle.self = cycle
    return weakref.ref(cycle)


def test_automatic_collection_pauses_in_the_block_and_comes_back():
    assert gc.isenabled()
    with young_garbage_only():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_sweep_still_frees_the_blocks_cyclic_garbage():
    with young_garbage_only() as sweep:
        alive = unreferenced_cycle()
        assert alive() is not None  # a cycle outlives its last name while collection is paused
        sweep()
        assert alive() is None


def test_an_inner_pause_leaves_the_sweep_to_the_outer_one():
    with young_garbage_only():
        with young_garbage_only() as inner_sweep:
            alive = unreferenced_cycle()
            inner_sweep()
            assert alive() is not None
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        with young_garbage_only():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("enabled", [True, False])
def test_retrieve_batch_leaves_the_collector_as_it_found_it(example_corpus, tmp_path, enabled):
    tree = dashrag.build({"component": "TFIDFRetriever", "params": {}}, example_corpus, tmp_path)
    (gc.enable if enabled else gc.disable)()
    try:
        answers = tree.retrieve_batch(["vector search", "rank fusion"])
        assert gc.isenabled() is enabled and len(answers) == 2
    finally:
        gc.enable()
