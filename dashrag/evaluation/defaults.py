"""Defaults of an evaluation run, in a module of their own: the CLI shows them in its help
without importing the evaluation stack (pytrec_eval, the metrics) on every `dashrag` start."""

DEFAULT_TOP_K = 100  # deep enough for recall@100, the deepest default metric
DEFAULT_BATCH_SIZE = 64  # queries per retrieve_batch call: vectorised, yet a live progress bar
