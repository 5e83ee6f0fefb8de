"""Two processes save one folder while this one loads it for 4 s: counts good and failed loads.

Run from the repo root: `PYTHONPATH=. .venv/bin/python bench/race_saves_and_loads.py`
(put an older dashrag first on PYTHONPATH to measure it side by side)."""
import multiprocessing, time, json, sys, tempfile
from pathlib import Path
import dashrag
print("dashrag from", dashrag.__file__)
from tests.core.save_loop import fitted_trees, save_forever, QUERY
FORK = multiprocessing.get_context("fork")
tmp = Path(tempfile.mkdtemp())
corpus = dashrag.Corpus.from_folder("examples/corpus")
trees = fitted_trees(corpus, tmp)
folder = tmp / "saved"; trees[0].save(folder)
savers = [FORK.Process(target=save_forever, args=(trees, folder, f)) for f in (0, 1)]
[s.start() for s in savers]
loads = fails = 0; kinds = {}
end = time.monotonic() + 4
while time.monotonic() < end:
    try:
        dashrag.load(folder).retrieve(QUERY); loads += 1
    except Exception as e:
        fails += 1; kinds[type(e).__name__] = kinds.get(type(e).__name__, 0) + 1
[s.kill() for s in savers]; [s.join() for s in savers]
print(f"loads ok {loads}, failed {fails}, {kinds}")
try:
    dashrag.load(folder); print("final load ok")
except Exception as e:
    print("final load FAILED", type(e).__name__, e)
