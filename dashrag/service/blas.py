"""One BLAS thread per vector product in the service process.

A service runs requests side by side on worker threads, so a product has no idle core to
spread over; and OpenBLAS's extra threads spin after each product, waiting for the next.
Measured with SciFact's 5,183 MiniLM vectors, one query a product every 5 ms: two threads
took 0.32 ms a product and 5.8 ms of CPU (the second thread spinning through the gap), one
thread 0.55 ms and 1.0 ms. In ``dashrag serve`` that spinning thread held a core through
every dense request (docs/service.md, "Overhead").

The limit is process-wide, so it is set by the process's owner: ``dashrag serve`` at
start-up, or whoever mounts :func:`dashrag.service.app.create_app` in their own server.
"""

from __future__ import annotations


def limit_blas_threads(threads: int) -> dict[str, int]:
    """Every BLAS library loaded (OpenBLAS, MKL, BLIS) uses at most ``threads`` threads; 0 changes nothing.
    Answers each BLAS library's thread count afterwards, for the start-up log."""
    import numpy  # noqa: F401  (loads numpy's BLAS: a library not loaded yet cannot be limited)
    from threadpoolctl import threadpool_info, threadpool_limits

    if threads > 0:
        threadpool_limits(limits=threads, user_api="blas")
    return {lib["internal_api"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
