"""The serving process's interpreter, set so that the event loop answers while queries run.

Queries run on worker threads of the service's process, and the event loop (``/health``, every
request's parsing and answer) waits for the GIL behind them. Two things held it longest
(measured with ``bench/bench_filter_bounds.py``: four concurrent largest-allowed filtered
queries, a probe thread in the server timing its own wake-ups; docs/security.md, "The event
loop under load"):

- **Full garbage collections.** Every query's allocations (its filter's parsed terms, trace
  nodes) promote objects into the oldest generation, so about once a second a full collection
  walked the whole heap, 254,000 objects of imports and loaded trees, holding the GIL for 139 ms
  of CPU (241 ms wall seen). Everything alive once the trees are loaded lives as long as the
  process, so it is moved out of the collector's reach (``gc.freeze``) after one last full
  collection: a full collection then walks only what came later. Reference counting still
  frees what is frozen (a reloaded tree's old objects: a dropped tree left no cyclic garbage
  when measured); only cyclic garbage among them would stay.
- **The switch interval.** A thread that wants the GIL waits up to ``sys.getswitchinterval()``
  (5 ms) before the holder is asked to drop it, and with four query threads ready the loop
  may wait several such turns for each step of a request.

Both are process-wide, so they are set by the process's owner: ``dashrag serve`` once its trees
are loaded, or whoever mounts :func:`dashrag.service.app.create_app` in their own server (as
with ``blas.py``).
"""

from __future__ import annotations

import gc
import sys


def responsive_interpreter(switch_interval_ms: float) -> dict[str, float]:
    """Set the switch interval to ``switch_interval_ms`` and freeze what is alive now (call it once the trees
    are loaded). Answers what was set, for the start-up log."""
    sys.setswitchinterval(switch_interval_ms / 1000)
    gc.collect()
    gc.freeze()
    return {"switch_interval_ms": sys.getswitchinterval() * 1000, "frozen_objects": gc.get_freeze_count()}
