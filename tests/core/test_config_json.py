"""Reading a config from JSON text (core/config_json.py): strict JSON, one clear error."""

from __future__ import annotations

import json
import math

import pytest

from dashrag.core.config_json import loads_config, strict_loads
from dashrag.errors import ConfigError


def test_a_key_given_twice_in_a_config_is_refused_naming_it():
    with pytest.raises(ConfigError, match="tree.json: the key 'top_k' appears twice in one object"):
        loads_config('{"component": "BM25Retriever", "params": {"top_k": 5, "top_k": 50}}', "tree.json")


def test_a_config_file_still_parses_nan_for_validation_to_name_its_path():
    assert math.isnan(loads_config('{"k1": NaN}', "tree.json")["k1"])  # validation reports it with its path


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e400}'])
def test_strict_json_with_finite_refuses_every_non_finite_number(text):
    with pytest.raises(json.JSONDecodeError):
        strict_loads(text, finite=True)
