"""``dashrag rerank`` and ``dashrag rerank-candidates`` (docs/reranking.md).

``dashrag rerank QUERY`` is the rag-reranker's ``ragctl rerank`` local smoke: a backend (``--backend``)
reranks a small built-in candidate set through :class:`~dashrag.rerank.RerankPipeline`, and the answer is
printed as the reference prints it (``query:``, ``tenant:``, ``backend:``, ``mmr:``, ``top_k:``,
``results:``, then ``#1  score=...  id=...  text`` lines).

``dashrag rerank-candidates``: candidates in, reranked candidates out. The input is what a retrieval step
elsewhere produced: ``{"query": ..., "candidates": [{"id", "text",
"score"?, "metadata"?}, ...]}`` as one JSON object, or JSON Lines (one such request per line), from a
file or stdin. The stages and MMR are flags; the body is one call to
:func:`dashrag.rerank.rerank_input` with a :class:`~dashrag.rerank.RerankPipeline`. The answer is JSON
(one object for one object in, one line per request for JSON Lines in) on stdout or ``--out``.
A bad input or flag is one ``error:`` line, exit 2.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from dashrag.cli.config_files import resolve_component, resolve_config
from dashrag.cli.console import user_errors
from dashrag.cli.safe_text import json_line
from dashrag.display import visible
from dashrag.errors import ConfigError, QueryError

STAGE_HELP = ("A cross-encoder: a model folder or a Hugging Face name already on this machine; or any text "
              "reranker's component JSON (inline or a file), e.g. a CohereReranker.")


def stage_config(arg: str | None) -> dict[str, Any] | None:
    """A ``--stage1`` / ``--stage2`` value: a component config (JSON inline or in a file) as it is; anything
    else names a cross-encoder model."""
    if arg is None:
        return None
    if arg.lstrip().startswith("{") or Path(arg).is_file():
        return resolve_config(arg)
    return {"component": "CrossEncoderRetriever", "params": {"model": arg}}


def _read_input(source: str) -> tuple[str, str]:
    """(text, where) of ``source``: a file path, or ``-`` for stdin."""
    if source == "-":
        return sys.stdin.read(), "stdin"
    path = Path(source)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except FileNotFoundError:
        raise QueryError(f"{path}: no such candidates file") from None
    except UnicodeDecodeError as exc:
        raise QueryError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise QueryError(f"{path}: cannot be read ({exc.strerror})") from None


app = typer.Typer()


@app.command("rerank-candidates")
@user_errors
def rerank_candidates(
    candidates: str = typer.Argument("-", help=(
        "The candidates: a JSON file {query, candidates: [{id, text, score?, metadata?}]} or JSON Lines (one such "
        "request per line); - (the default) reads stdin.")),
    stage1: str | None = typer.Option(None, "--stage1", help="Stage 1, which scores every candidate. " + STAGE_HELP),
    stage1_top_n: int = typer.Option(50, "--stage1-top-n", min=1, max=10_000,
                                     help="How many candidates stage 1 (or, without one, the given order) passes on."),
    stage2: str | None = typer.Option(None, "--stage2", help="Stage 2, the precise one. " + STAGE_HELP),
    stage2_top_n: int = typer.Option(10, "--stage2-top-n", min=1, max=10_000,
                                     help="How many of stage 1's best stage 2 scores; the rest follow in their order."),
    top_k: int = typer.Option(10, "--top-k", min=1, max=10_000, help="How many candidates to return."),
    mmr: bool = typer.Option(False, "--mmr", help="Re-order the result with MMR (λ 0.7), for diversity."),
    mmr_lambda: float | None = typer.Option(None, "--mmr-lambda", min=0.0, max=1.0, help=(
        "MMR's λ (1: relevance only, 0: diversity only); giving it turns MMR on.")),
    mmr_embedding: str = typer.Option("MiniLMEmbedding", "--mmr-embedding",
                                      help="The embedding MMR compares candidates with: a component name or JSON."),
    out: Path | None = typer.Option(None, "--out", help="Write the answer to this file (default: stdout)."),
) -> None:
    """Rerank given candidates for their query: stage 1, stage 2, MMR, as the flags say."""
    from dashrag.core.persistence import atomic_write_text
    from dashrag.rerank import StagedMMR, StagedRerankPipeline, rerank_input

    if stage1 is None and stage2 is None and not mmr and mmr_lambda is None:
        raise ConfigError("name what reranks: --stage1 and/or --stage2 (a cross-encoder model or a reranker's JSON), "
                          "or --mmr")
    text, where = _read_input(candidates)
    mmr_config = None
    if mmr or mmr_lambda is not None:
        lam = StagedMMR().lambda_mult if mmr_lambda is None else mmr_lambda
        mmr_config = StagedMMR(lambda_mult=lam, embedding=resolve_component(mmr_embedding))
    with StagedRerankPipeline(stage_config(stage1), stage_config(stage2), stage1_top_n=stage1_top_n,
                              stage2_top_n=stage2_top_n, top_k=top_k, mmr=mmr_config) as pipeline:
        results, as_lines = rerank_input(text, where, pipeline)
    answers = [r.model_dump(exclude_none=True) for r in results]
    written = "".join(json_line(a) + "\n" for a in answers) if as_lines else json_line(answers[0], indent=2) + "\n"
    if out is None:
        sys.stdout.write(written)
    else:
        atomic_write_text(out, written)


class Backend(StrEnum):
    noop = "noop"
    sentence_transformers = "sentence-transformers"
    cohere = "cohere"
    jina = "jina"


@app.command("rerank")
@user_errors
def rerank(
    query: str = typer.Argument(..., help="What the demo candidates are reranked for."),
    top_k: int = typer.Option(3, "--top-k", "-k", min=1, max=10_000, help="How many reranked chunks to print."),
    stage1_top_n: int = typer.Option(50, "--stage1-top-n", min=1, max=10_000,
                                     help="Stage 1 (fast_rerank) keeps this many."),
    stage2_top_n: int = typer.Option(10, "--stage2-top-n", min=1, max=10_000,
                                     help="Stage 2 (precise_rerank) returns this many."),
    mmr: bool = typer.Option(False, "--mmr/--no-mmr", help="Re-order for diversity with MMR."),
    mmr_lambda: float = typer.Option(0.7, "--mmr-lambda", min=0.0, max=1.0,
                                     help="MMR's λ: 1 relevance only, 0 diversity after the first pick."),
    backend: Backend = typer.Option(Backend.noop, "--backend", help=(
        "What reranks: noop, sentence-transformers (a local cross-encoder), cohere or jina (their key from "
        "COHERE_API_KEY / JINA_API_KEY).")),
    model: str | None = typer.Option(None, "--model", help=(
        "The model: a cross-encoder folder or cached name (sentence-transformers, default BAAI/bge-reranker-v2-m3), "
        "or the hosted service's model name.")),
    tenant: str = typer.Option("dashrag-local", "--tenant", "-t", help="The tenant id of the request context."),
    api_base: str | None = typer.Option(None, "--api-base", help=(
        "cohere / jina: the base URL of a server speaking their protocol (default: the service's own).")),
) -> None:
    """Rerank a small built-in candidate set for QUERY with a backend: a smoke run of the reranking pipeline."""
    from dashrag.rerank import MMRConfig, RequestContext, RerankPipeline
    from dashrag.rerank.backends import backend_named
    from dashrag.rerank.demo import demo_hydrator

    reranker = backend_named(backend.value, model, api_base)
    hydrator = demo_hydrator()
    mmr_config = MMRConfig(lambda_=mmr_lambda, top_k=top_k) if mmr else None
    embedder = _mmr_embedder() if mmr else None
    pipeline = RerankPipeline(reranker=reranker, hydrator=hydrator, embedder=embedder, mmr=mmr_config,
                              stage1_top_n=stage1_top_n, stage2_top_n=stage2_top_n)
    chunks = pipeline.rerank_sync(RequestContext(tenant), query, hydrator.refs(), top_k=top_k)
    lines = [f"query:    {visible(repr(query))}", f"tenant:   {visible(tenant)}", f"backend:  {reranker.name}",
             f"mmr:      {f'on (lambda={mmr_lambda})' if mmr else 'off'}", f"top_k:    {top_k}",
             f"results:  {len(chunks)}"]
    lines += [f"  #{rank}  score={c.score:.4f}  id={visible(c.id)}  {visible(c.text)}"
              for rank, c in enumerate(chunks, start=1)]
    sys.stdout.write("\n".join(lines) + "\n")


def _mmr_embedder() -> Any:
    """What MMR compares the demo chunks with: the shipped MiniLM embedding (the demo chunks carry no vectors)."""
    from dashrag.core.factory import build_component

    return build_component({"component": "MiniLMEmbedding"}, "embedding")
