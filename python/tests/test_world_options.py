"""World.process's options without a GPU: they reach the C API (whose refusal says why) and a
wrong value is refused before anything collective. No torch needed."""

import pytest

import collc


def never(data):
    raise AssertionError("the all-gather must not be called here")


def test_options_must_be_booleans():
    with pytest.raises(collc.Error, match="share_gpu and check_calls must be True or False"):
        collc.World.process(0, 2, 0, never, share_gpu="yes")


def test_sharing_a_gpu_without_one_says_no_gpu():
    if collc.device_count() > 0:
        pytest.skip("a GPU is visible: this checks a machine without one")
    with pytest.raises(collc.Error, match="no GPU") as error:
        collc.World.process(0, 2, 0, never, share_gpu=True, check_calls=True)
    assert error.value.status == "COLLC_CUDA_ERROR"


def test_a_wrong_rank_is_refused_before_the_all_gather():
    with pytest.raises(collc.Error, match="rank 2 of 2"):
        collc.World.process(2, 2, 0, never, share_gpu=True)
