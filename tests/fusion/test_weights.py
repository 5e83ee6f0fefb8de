"""resolve_weights: the one check every fusion mode's weights go through."""

import math

import pytest

from dashrag.errors import ConfigError
from dashrag.fusion.weights import resolve_weights


def test_missing_weights_default_to_one_per_child():
    assert resolve_weights(None, 3) == (1.0, 1.0, 1.0)


def test_given_weights_come_back_as_floats_in_child_order():
    assert resolve_weights([2, 0.5, 0], 3) == (2.0, 0.5, 0.0)


def test_a_weight_list_of_the_wrong_length_is_a_config_error_on_weights():
    with pytest.raises(ConfigError) as raised:
        resolve_weights([1.0, 1.0], 3)
    assert [issue.path for issue in raised.value.issues] == ["weights"]
    assert "expected 3 weights" in str(raised.value)


def test_a_negative_weight_is_a_config_error_naming_its_index():
    with pytest.raises(ConfigError) as raised:
        resolve_weights([1.0, -0.5], 2)
    assert [issue.path for issue in raised.value.issues] == ["weights[1]"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_weight_is_a_config_error(bad):
    with pytest.raises(ConfigError):
        resolve_weights([1.0, bad], 2)


@pytest.mark.parametrize("bad", ["2", None, True])
def test_a_weight_that_is_not_a_number_is_a_config_error(bad):
    with pytest.raises(ConfigError):
        resolve_weights([bad], 1)


def test_all_weights_zero_is_a_config_error_because_it_would_fuse_nothing():
    with pytest.raises(ConfigError, match="at least one weight"):
        resolve_weights([0.0, 0.0], 2)
