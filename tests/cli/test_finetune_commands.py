"""``dashrag.cli.finetune_commands`` driven alone: the test split is refused before any training (the
training runs themselves: tests/cli/test_finetune_cli.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dashrag.cli import finetune_commands


@pytest.mark.parametrize("step", ["embedding", "reranker"])
def test_finetune_alone_refuses_the_test_split(step, scifact_subset, tmp_path):
    out = tmp_path / "model"
    result = CliRunner().invoke(finetune_commands.app, [step, "--dataset", str(scifact_subset), "--out", str(out),
                                                        "--split", "test"])
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and "test" in result.stderr
    assert not out.exists()
