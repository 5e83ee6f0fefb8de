"""Weight-space ensembling (WiSE-FT): the learned model's weights averaged with its base's after training.

Wortsman et al. 2022, "Robust fine-tuning of zero-shot models": θ = (1 − α)·θ_base + α·θ_learned keeps most of what
fine-tuning gained on its own task and the base model's robustness to queries unlike the training pairs. That is the
failure the ``--corpus`` pipeline meets: its pseudo-queries are spans of the documents, a user's queries are not
(docs/finetuning.md, "Why the learned model loses on SciFact's claims"). α (``learned_share``) is the learned
weights' share; 1 keeps the model as trained. The ``--corpus`` default is the paper's 0.5, chosen without reading
SciFact's test split (docs/finetuning.md, "Interpolating with the base model's weights").
"""

from __future__ import annotations

import math
from itertools import chain
from typing import Any

from dashrag.errors import ConfigError, ConfigIssue

LEARNED_SHARE = 0.5  # the paper's default α; the --corpus recipe's


def check_learned_share(value: float, option: str = "--learned-share") -> None:
    """α must be in (0, 1]: 0 would be the base model itself (train nothing: ``--no-training``)."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= 1):
        raise ConfigError([ConfigIssue(option, f"must be in (0, 1] (the learned weights' share), not {value!r}")])


def named_tensors(model: Any) -> dict[str, Any]:
    """Every parameter and buffer of a torch module by name, a tensor shared by two names (tied weights) once."""
    return dict(chain(model.named_parameters(), model.named_buffers()))


def interpolate_with_base(learned: Any, base: Any, learned_share: float) -> int:
    """In place: every floating-point tensor of ``learned`` becomes ``(1 − α)·base + α·learned``; integer buffers
    (token positions, ids) are left as they are. Returns how many tensors were mixed. The two modules must have
    the same architecture: a tensor missing from the base, or of another shape, is refused."""
    import torch

    check_learned_share(learned_share)
    base_tensors = named_tensors(base)
    mixed = 0
    with torch.no_grad():
        for name, tensor in named_tensors(learned).items():
            if not tensor.is_floating_point():
                continue
            other = base_tensors.get(name)
            if other is None or other.shape != tensor.shape:
                raise ConfigError(f"weight interpolation: the base model has no tensor {name!r} of shape "
                                  f"{tuple(tensor.shape)}; the learned model is not of its architecture")
            tensor.mul_(learned_share).add_(other.to(tensor.device, tensor.dtype), alpha=1 - learned_share)
            mixed += 1
    return mixed
