"""What the HTTP reranker components share: a server scores texts, the component ranks chunks by it.

Three services speak three protocols (Text Embeddings Inference's ``/rerank``, Cohere's
``/v2/rerank``, Jina's ``/v1/rerank``), and everything around the protocol is the same:

* two roles: with one child retriever, the child proposes ``fetch_k`` candidates, the server
  scores them, the best ``top_k`` come back (ties in the child's order); with no child, a
  reranker only (``rerank_texts``, ``score_chunks``, the reranker slot of the boolean
  component and of the rerank pipeline), whose ``retrieve`` refuses;
* texts go in batches of ``batch_size``, at most ``max_workers`` requests in flight at once,
  each with ``timeout_s``;
* the API key is a ``credential`` component (an environment variable's *name*), read at each
  request and sent as ``Authorization: Bearer``; unset, no header is sent, unless
  ``api_key_required``, when it is a ``CredentialError`` naming the variable before any
  request; the config, the saved folder and the trace hold only the name, and error messages
  are scrubbed of the key even when a server echoes it;
* redirects are never followed (a request carries the key and the texts; a 3xx could send
  both on, perhaps from https to http): a 3xx is an error naming its status;
* every malformed answer is a :class:`RerankerAnswerError` naming the component (so the
  service), its URL, the batch and the problem.

A subclass says only what differs: the path under ``api_base``, the request body, and how to
read one score per text out of the answer (:meth:`RemoteReranker.request_body`,
:meth:`RemoteReranker.scores_from`). Its params extend :class:`RemoteRerankerParams`, so
every shared parameter is declared once (and checked by the service's trust boundary by kind:
``api_base`` is an endpoint, the credential's ``var`` a credential name).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Generic, Sequence, TypeVar

import numpy as np
from pydantic import Field

from dashrag.core.ask import Ask
from dashrag.core.params import (
    ComponentParams,
    ComponentSpec,
    ParamKind,
    component_field,
    components_field,
    kind_field,
    less_or_equal,
    spec,
    top_k_field,
)
from dashrag.core.ranking import by_distance, rerank_by_scores
from dashrag.core.retriever import CompositeRetriever, Result, check_query
from dashrag.errors import RetrievalError
from dashrag.llm.redaction import redact

ERROR_BODY_CHARS = 300  # of a failing server's answer, quoted in the error


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A 3xx stays an HTTPError: the key is never sent on to another URL."""

    def redirect_request(self, *args: Any) -> None:
        return None


OPENER = urllib.request.build_opener(_NoRedirects)


class RerankerAnswerError(RetrievalError):
    """The reranking server answered something that is not one score per text."""


def plan_batches(count: int, batch_size: int) -> list[tuple[int, int]]:
    """``[start, end)`` slices of at most ``batch_size`` covering ``count`` texts."""
    return [(start, min(start + batch_size, count)) for start in range(0, count, batch_size)]


def scores_by_index(entries: Any, count: int, score_key: str, missing_score: float | None = None) -> list[float]:
    """Scores in text order from ``[{index, <score_key>}, ...]`` for ``count`` texts (any order, each text once);
    anything else is a RerankerAnswerError naming the entry and the problem. ``missing_score``: what an entry
    without a score counts as (TEI-style services: 0.0, as the reference's service counts it); None: an error."""
    if not isinstance(entries, list):
        raise RerankerAnswerError(
            f"expected a JSON list of {{index, {score_key}}} objects, got {type(entries).__name__}"
        )
    scores: list[float | None] = [None] * count
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise RerankerAnswerError(
                f"entry {position} is {type(entry).__name__}, not an {{index, {score_key}}} object"
            )
        for key in ("index",) if missing_score is not None else ("index", score_key):
            if key not in entry:
                raise RerankerAnswerError(f"entry {position} has no {key!r}")
        index, score = entry["index"], entry.get(score_key, missing_score)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise RerankerAnswerError(f"entry {position} has index {index!r}, outside 0..{count - 1}")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise RerankerAnswerError(f"entry {position} has {score_key} {score!r}, not a finite number")
        if scores[index] is not None:
            raise RerankerAnswerError(f"index {index} is scored twice")
        scores[index] = float(score)
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise RerankerAnswerError(f"no score for text(s) {shown} of {count}")
    return scores  # type: ignore[return-value]


class RemoteRerankerParams(ComponentParams):
    """The parameters every HTTP reranker has; a subclass adds its own and redeclares ``api_base`` and
    ``credential`` with its service's defaults."""

    children: list[ComponentSpec] = components_field(
        "retriever",
        [],
        max_length=1,
        description="The retriever whose candidates are reranked; none when used only as a reranker "
        "(the reranker slot of a BooleanQueryRetriever, a stage of the rerank pipeline).",
    )
    api_base: str = kind_field(
        ParamKind.ENDPOINT,
        "http://localhost:8080",
        pattern=r"^https?://\S+$",
        description="Base URL of the server; requests go to {api_base}/rerank.",
    )
    credential: ComponentSpec = component_field(
        "credential",
        spec("EnvCredential", var="DASHRAG_RERANKER_API_KEY"),
        description="Where the API key comes from (EnvCredential: an environment variable's name); sent as a bearer "
        "token when set. The key itself is never stored.",
    )
    api_key_required: bool = Field(
        False, description="Refuse to send a request when the credential's variable is unset."
    )
    batch_size: int = Field(32, ge=1, le=4_096, description="Texts per request.")
    max_workers: int = Field(4, ge=1, le=64, description="Requests in flight at once.")
    timeout_s: float = Field(30.0, gt=0, le=600, description="Seconds to wait for one request.")
    top_k: int = top_k_field(5, "How many chunks to return (with a child).")
    fetch_k: int = Field(20, ge=1, le=10_000, description="How many candidates to ask the child for.")

    RULES = (less_or_equal("top_k", "fetch_k"),)


RP = TypeVar("RP", bound=RemoteRerankerParams)


class RemoteReranker(CompositeRetriever[RP], Generic[RP]):
    #: the path under ``api_base`` the requests go to
    PATH: ClassVar[str]

    @property
    def url(self) -> str:
        return self.params.api_base.rstrip("/") + self.PATH

    # -- what a protocol says ------------------------------------------------------
    def request_body(self, query: str, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def scores_from(self, answer: Any, count: int) -> list[float]:
        """One score per text, in text order, from the server's parsed JSON answer."""
        raise NotImplementedError

    def texts_per_request(self) -> int:
        """How many texts one request carries (``batch_size``; a protocol scoring one text per call says 1)."""
        return self.params.batch_size

    def requests_in_flight(self) -> int:
        """How many requests may be in flight at once (``max_workers``)."""
        return self.params.max_workers

    # -- scoring texts ----------------------------------------------------------
    def rerank_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        """The server's score of each text for ``query``, in text order (higher is better)."""
        texts = list(texts)
        if not texts:
            return []
        return self.score_texts(query, texts, self._api_key())

    def score_texts(self, query: str, texts: Sequence[str], key: str | None) -> list[float]:
        """:meth:`rerank_texts` with the key given (the rag-reranker backends' ``api_key=``, held in memory by
        the caller) rather than read from the credential's variable."""
        texts = list(texts)
        batches = plan_batches(len(texts), self.texts_per_request())
        if not batches:
            return []
        calls = [(number, query, texts[start:end], key) for number, (start, end) in enumerate(batches, 1)]
        workers = min(self.requests_in_flight(), len(calls))
        if workers == 1:
            parts = [self._score_batch(*call) for call in calls]
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dashrag-rerank") as pool:
                parts = list(pool.map(lambda call: self._score_batch(*call), calls))
        return [score for part in parts for score in part]

    @classmethod
    def needed_credentials(cls, params: Any) -> tuple[str, ...]:
        return ("credential",) if params.api_key_required else ()

    def _api_key(self) -> str | None:
        """The key, read now; None when unset, or a CredentialError naming the variable if it is required."""
        credential = self.nested["credential"]
        needed = "credential" in self.needed_credentials(self.params)
        return credential.resolve() if needed else credential.resolve_or_none()

    def _score_batch(self, number: int, query: str, texts: list[str], key: str | None) -> list[float]:
        body = json.dumps(self.request_body(query, texts)).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        where = f"{self.component_name}: {self.url} (batch {number}, {len(texts)} texts)"
        try:
            with OPENER.open(request, timeout=self.params.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = "a redirect, not followed" if 300 <= exc.code < 400 else _body_excerpt(exc)
            raise RetrievalError(
                _redact(f"{where} answered HTTP {exc.code}" + (f": {detail}" if detail else ""), key)
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RetrievalError(_redact(f"{where}: request failed ({reason})", key)) from None
        try:
            answer = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            excerpt = raw[:ERROR_BODY_CHARS].decode("utf-8", "replace")
            raise RerankerAnswerError(
                _redact(f"{where} answered something that is not JSON: {excerpt!r}", key)
            ) from None
        try:
            return self.scores_from(answer, len(texts))
        except RerankerAnswerError as exc:
            raise RerankerAnswerError(_redact(f"{where} answered a malformed ranking: {exc}", key)) from None

    # -- the retriever contract ---------------------------------------------------
    def _retrieve(self, query: str, ask: Ask) -> Result:
        return self._retrieve_batch([query], ask)[0]

    def _retrieve_batch(self, queries: list[str], ask: Ask) -> list[Result]:
        children = self.nested.get("children", [])
        if not children:
            raise RetrievalError(
                f"{self.component_name} has no child retriever: it can only rerank (rerank_texts, "
                "score_chunks, the reranker slot of a BooleanQueryRetriever, a stage of the rerank pipeline)"
            )
        k = self.top_k(ask)
        answers = children[0].answer_batch(queries, ask.with_top_k(max(self.params.fetch_k, k)))
        results: list[Result] = []
        for query, (candidates, child_trace) in zip(queries, answers):
            scores = np.asarray(self.rerank_texts(query, [c.chunk.text for c in candidates]), dtype=np.float64)
            chosen, _ = rerank_by_scores(candidates, scores, k, self.component_name)
            selection = {
                "summary": f"{self.component_name} kept {len(chosen)} of {len(candidates)} candidates",
                "candidates": len(candidates),
                "url": self.url,
                "batches": len(plan_batches(len(candidates), self.texts_per_request())),
            }
            results.append((chosen, [child_trace], selection))
        return results

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """Distance = −(the server's score), ascending; ties by corpus order; unknown ids raise UnknownChunkError."""
        query = check_query(query)
        chunks = self.require_infra().chunks
        rows = chunks.rows_of(chunk_ids)
        distances = -np.asarray(self.rerank_texts(query, chunks.texts_at(rows.tolist())), dtype=np.float64)
        return by_distance(chunk_ids, rows, distances)


def _body_excerpt(error: urllib.error.HTTPError) -> str:
    try:
        return error.read()[:ERROR_BODY_CHARS].decode("utf-8", "replace").strip()
    except Exception:  # the body is a courtesy; the status code is the error
        return ""


def _redact(message: str, key: str | None) -> str:
    """The message with the API key's value masked, in case a server echoed it."""
    return redact(message, key) if key else message
