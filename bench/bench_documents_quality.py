"""Quality survives conversion: SciFact abstracts rendered into PDF, DOCX and HTML files index to the same
nDCG@10 as the same documents read from corpus.jsonl (issue 35).

Each abstract becomes one file per format, title as heading and abstract as body: a PDF (reportlab
platypus: the title in the Heading1 style, the abstract as a wrapped paragraph, so the text layer has
line breaks where the lines wrap), a DOCX (python-docx: Heading 1, then a paragraph), an HTML page (the
title as <title> and <h1>, the abstract as <p> inside <article>, between a navigation bar and a footer
that the converter must drop). Each folder is read with ``Corpus.from_folder`` (the converters), the
``jsonl`` side with ``Corpus`` over the same records; the same tree indexes each (``--preset``, one
chunk per document as the SciFact benches), the test queries run, and a file's id (``<_id>.pdf``) is
mapped back to its ``_id``. The subset: every document judged in the test split, then the corpus in
order up to ``--documents`` (the whole corpus is 5183; the rendering is the slow part on shared cores).

Embedding is what a dense preset (``hybrid``) costs: four corpora of the same abstracts. The project's
embedding cache (embeddings/cache.py) is keyed by the chunk set's fingerprint (ids and metadata included),
so no converted corpus hits the JSONL one. A sentence-transformers model reads only a text's token ids
(truncated to its ``max_seq_length``), so the vectors of two texts with the same token ids are the same
vector: while documents are embedded here, a text whose token ids (by the model's own tokenizer) equal an
already embedded text's takes that vector instead of a second forward pass (``TokenMemo``;
``--no-token-memo`` embeds every corpus in full). How many texts each corpus really embedded is in the
output (``embedded``): the share of converted texts that differ, as the model reads them, from the JSONL.

    nice .venv/bin/python bench/bench_documents_quality.py \
        [--documents 1000] [--preset keyword hybrid] [--no-token-memo] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import dashrag
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.evaluation.beir import load_split
from dashrag.evaluation.metrics import evaluate
from dashrag.evaluation.runs import run_from_results

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
CHUNKER = {"component": "WholeDocumentChunker", "params": {}}
PAGE = ("<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        "<header><nav><a href='/'>Home</a> | <a href='/browse'>Browse journals</a> | <a href='/help'>Help</a>"
        "</nav></header><main><article><h1>{title}</h1><p>{text}</p></article></main>"
        "<footer><p>Copyright 2026 Example Press. Terms of use. Privacy policy.</p></footer></body></html>")


def scifact_subset(size: int) -> tuple[list[SourceDocument], dict[str, str], dict[str, dict[str, int]]]:
    """SciFact's judged test documents first, then others up to ``size``; the test queries with a judged document in
    it, and their judgements restricted to it."""
    split = load_split(SCIFACT, "test")
    judged = {d for judgements in split.qrels.values() for d in judgements}
    everything = Corpus.from_beir(SCIFACT).documents
    documents = [d for d in everything if d.id in judged]
    documents += [d for d in everything if d.id not in judged][: max(0, size - len(documents))]
    in_subset = {d.id for d in documents}
    qrels = {q: {d: r for d, r in j.items() if d in in_subset} for q, j in split.qrels.items()}
    qrels = {q: j for q, j in qrels.items() if j}
    return documents, {q: split.queries[q] for q in qrels}, qrels


def render_pdf(doc: SourceDocument, path: Path) -> None:
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    story = [Paragraph(html.escape(doc.title), styles["Heading1"]), Paragraph(html.escape(doc.text), styles["Normal"])]
    SimpleDocTemplate(str(path), title=doc.title).build(story)


def render_docx(doc: SourceDocument, path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading(doc.title, level=1)
    document.add_paragraph(doc.text)
    document.save(str(path))


def render_html(doc: SourceDocument, path: Path) -> None:
    path.write_text(PAGE.format(title=html.escape(doc.title), text=html.escape(doc.text)), encoding="utf-8")


RENDER = {"pdf": render_pdf, "docx": render_docx, "html": render_html}


class TokenMemo:
    """Document vectors by token ids: a text the model reads as an already embedded one reuses its vector.

    Installed over ``SentenceTransformerBacked._embed`` for documents only (queries are embedded as they are);
    ``asked``/``embedded`` count texts since the last ``take_counts``."""

    def __init__(self) -> None:
        self.vectors: dict[tuple[int, ...], np.ndarray] = {}
        self.asked = self.embedded = 0

    def take_counts(self) -> dict[str, int]:
        counts = {"asked": self.asked, "embedded": self.embedded}
        self.asked = self.embedded = 0
        return counts

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        from dashrag.embeddings.sentence_transformer import SentenceTransformerBacked

        original = SentenceTransformerBacked._embed
        memo = self

        def embed(model: SentenceTransformerBacked, texts: list[str], is_query: bool) -> np.ndarray:
            if is_query:
                return original(model, texts, is_query)
            ids = model.model().tokenizer(texts, truncation=True, max_length=model.reading_length())["input_ids"]
            keys = [tuple(row) for row in ids]
            missing = {key: text for key, text in zip(keys, texts) if key not in memo.vectors}
            if missing:
                for key, vector in zip(missing, original(model, list(missing.values()), is_query)):
                    memo.vectors[key] = vector
            memo.asked += len(texts)
            memo.embedded += len(missing)
            return np.stack([memo.vectors[key] for key in keys]).astype(np.float32)

        SentenceTransformerBacked._embed = embed  # type: ignore[method-assign, assignment]
        try:
            yield
        finally:
            SentenceTransformerBacked._embed = original  # type: ignore[method-assign]


def ndcg(corpus: Corpus, preset: str, chunker: dict, queries: dict[str, str], qrels: dict, workdir: Path) -> float:
    """nDCG@10 of ``preset`` built over ``corpus`` with ``chunker``; a rendered file's hit counts as its document."""
    tree = dashrag.build(preset, corpus, workdir, chunker=chunker)
    try:
        run = run_from_results({q: tree.retrieve(text, top_k=100)[0] for q, text in queries.items()})
    finally:
        tree.close()
    plain = {q: {d.rsplit(".", 1)[0] if d.endswith(tuple(RENDER)) else d: s for d, s in scores.items()}
             for q, scores in run.items()}
    return evaluate(qrels, plain, "ndcg@10").mean["ndcg@10"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--preset", nargs="+", default=["keyword"])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-token-memo", action="store_true",
                        help="embed every corpus in full (no vector reused across texts of the same token ids)")
    args = parser.parse_args()
    documents, queries, qrels = scifact_subset(args.documents)
    figures: dict = {"documents": len(documents), "queries": len(queries), "load_average": os.getloadavg(),
                     "render_s": {}, "read": {}, "ndcg@10": {}, "build_and_query_s": {}, "embedded": {}}
    memo = TokenMemo()
    with tempfile.TemporaryDirectory(prefix="bench-documents-") as tmp:
        root = Path(tmp)
        corpora = {"jsonl": Corpus(tuple(documents))}
        for kind, render in RENDER.items():
            folder = root / kind
            folder.mkdir()
            started = time.perf_counter()
            for doc in documents:
                render(doc, folder / f"{doc.id}.{kind}")
            figures["render_s"][kind] = round(time.perf_counter() - started, 1)
            started = time.perf_counter()
            corpora[kind] = Corpus.from_folder(folder)
            figures["read"][kind] = {"seconds": round(time.perf_counter() - started, 1),
                                     "summary": corpora[kind].summary()}
            print(kind, figures["render_s"][kind], figures["read"][kind], flush=True)
        for preset in args.preset:
            scores, seconds, embedded = {}, {}, {}
            with memo.installed() if not args.no_token_memo else contextlib.nullcontext():
                for name, corpus in corpora.items():
                    started = time.perf_counter()
                    scores[name] = round(ndcg(corpus, preset, CHUNKER, queries, qrels, root / f"w-{preset}-{name}"), 4)
                    seconds[name] = round(time.perf_counter() - started, 1)
                    embedded[name] = memo.take_counts()
                    print(preset, name, scores[name], seconds[name], "s", embedded[name], flush=True)
            figures["ndcg@10"][preset], figures["build_and_query_s"][preset] = scores, seconds
            if any(counts["asked"] for counts in embedded.values()):
                figures["embedded"][preset] = embedded
    figures["load_average_after"] = os.getloadavg()
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
