"""gather and fusion_provenance: the dedup and the record every fused chunk carries."""

import json

from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.fusion.hits import ChildHit, fusion_provenance, gather


def scored(chunk_id: int, score: float) -> ScoredChunk:
    chunk = Chunk(id=chunk_id, document_id=f"doc{chunk_id}", position=0, text=f"chunk {chunk_id}")
    return ScoredChunk(chunk=chunk, score=score, source="child")


def test_gather_makes_one_candidate_per_chunk_id_in_order_of_first_appearance():
    candidates = gather([[scored(1, 0.9), scored(2, 0.5)], [scored(3, 7.0), scored(1, 4.0)]])
    assert [c.id for c in candidates] == [1, 2, 3]


def test_gather_records_every_child_that_returned_a_chunk_with_its_rank_and_raw_score():
    candidates = gather([[scored(1, 0.9), scored(2, 0.5)], [scored(3, 7.0), scored(1, 4.0)]])
    assert candidates[0].hits == [ChildHit(child=0, rank=1, score=0.9), ChildHit(child=1, rank=2, score=4.0)]


def test_gather_reads_a_chunk_repeated_within_one_child_at_its_first_appearance_only():
    (first, second) = gather([[scored(5, 3.0), scored(5, 2.0), scored(6, 1.0)]])
    assert first.hits == [ChildHit(child=0, rank=1, score=3.0)]
    assert second.hits == [ChildHit(child=0, rank=3, score=1.0)]  # keeps its place in the list


def test_gather_keeps_the_chunk_object_the_child_returned():
    child = [scored(4, 1.0)]
    assert gather([child])[0].chunk is child[0].chunk


def test_provenance_names_the_mode_the_fused_score_and_each_child_by_index():
    record = fusion_provenance("rrf", 0.03, [ChildHit(0, 1, 10.0), ChildHit(2, 4, 0.3)],
                               {2: {"normalised": 0.25}})
    assert record == {
        "fusion": "rrf",
        "fused_score": 0.03,
        "children": {"0": {"rank": 1, "score": 10.0}, "2": {"rank": 4, "score": 0.3, "normalised": 0.25}},
    }


def test_provenance_survives_a_json_round_trip_unchanged():
    record = fusion_provenance("max", 1.0, [ChildHit(1, 2, -3.5)])
    assert json.loads(json.dumps(record)) == record
