"""The cold-query peer of bench/bench_cold_query.py: load a saved bm25s index and answer one query.

What a bm25s user writes to do what ``dashrag query DIR "text" --json`` does: load the
index and its corpus from disk, tokenize the query (English stop words, Snowball
stemming, as the `keyword` preset), retrieve the top 10 and print them as one JSON line
with each document's text. Run: ``python bench/peer_bm25s_query.py INDEX_DIR "query text"``.
"""

import json
import sys

import bm25s
import Stemmer


def main() -> None:
    folder, query = sys.argv[1], sys.argv[2]
    index = bm25s.BM25.load(folder, load_corpus=True)
    tokens = bm25s.tokenize([query], stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False)
    documents, scores = index.retrieve(tokens, k=10, show_progress=False)
    results = [{"document_id": d["id"], "score": float(s), "text": d["text"]} for d, s in zip(documents[0], scores[0])]
    print(json.dumps({"query": query, "results": results}, ensure_ascii=False))


if __name__ == "__main__":
    main()
