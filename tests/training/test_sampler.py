"""The sampler check: validity on Poisson batches, power on shuffled and fixed-size ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpaudit.training import check_sampler


def poisson_batches(n, q, steps, seed):
    rng = np.random.default_rng(seed)
    return [np.flatnonzero(rng.random(n) < q) for _ in range(steps)]


def shuffled_batches(n, batch, epochs, seed):
    rng = np.random.default_rng(seed)
    return [part for _ in range(epochs) for part in np.array_split(rng.permutation(n), n // batch)]


def test_poisson_batches_pass_and_shuffled_batches_fail():
    passed = [check_sampler(poisson_batches(500, 0.1, 20, s), 0.1, records=500, epochs=1, seed=s).violated
              for s in range(20)]
    assert sum(passed) <= 3  # at most 5% expected; 3 of 20 would be p < 0.08 under a correct test
    for s in range(5):
        assert check_sampler(shuffled_batches(500, 50, 2, s), 0.1, records=500, epochs=1, seed=s).violated


def test_a_wrong_rate_is_flagged_and_duplicates_are_impossible():
    assert check_sampler(poisson_batches(1000, 0.2, 20, 0), 0.1, records=1000, epochs=1).violated
    batches = poisson_batches(1000, 0.1, 20, 1)
    batches[3] = np.concatenate([batches[3], batches[3][:1]])
    result = check_sampler(batches, 0.1, records=1000, epochs=1)
    assert result.violated and {t.name: t.rejected for t in result.tests}["duplicates"]


@given(st.integers(0, 10_000))
def test_result_is_reproducible_and_p_values_are_probabilities(seed):
    batches = poisson_batches(200, 0.1, 10, seed)
    a = check_sampler(batches, 0.1, records=200, epochs=1, seed=seed, draws=199)
    b = check_sampler(batches, 0.1, records=200, epochs=1, seed=seed, draws=199)
    assert a.to_dict() | {"seconds": 0} == b.to_dict() | {"seconds": 0}
    assert 0.0 <= a.p_value <= 1.0 and a.violated == (a.p_value <= a.false_alarm_rate)
    assert all(t.adjusted_p_value >= t.p_value for t in a.tests)


@pytest.mark.parametrize("kwargs, name", [({"sample_rate": 0.0}, "sample_rate"), ({"sample_rate": 0.1, "epochs": 0}, "epochs"),
                                          ({"sample_rate": 0.1, "false_alarm_rate": 1.0}, "false_alarm_rate"),
                                          ({"sample_rate": 0.1, "records": 5}, "records")])
def test_bad_arguments_name_themselves(kwargs, name):
    kwargs.setdefault("records", 100)
    with pytest.raises(ValueError, match=name):
        check_sampler(poisson_batches(100, 0.1, 5, 0), **kwargs)


def test_one_batch_is_not_enough_and_records_must_be_known():
    with pytest.raises(ValueError, match="epochs"):
        check_sampler([np.arange(10)], 0.1, records=100, epochs=1)
    with pytest.raises(ValueError, match="records"):
        check_sampler([np.arange(10), np.arange(5)], 0.1)


def test_torch_loaders_are_read_through_their_batch_sampler():
    torch = pytest.importorskip("torch")
    pytest.importorskip("opacus")
    from opacus.data_loader import DPDataLoader
    from torch.utils.data import DataLoader, TensorDataset

    dataset = TensorDataset(torch.randn(400, 3), torch.zeros(400))
    shuffled = DataLoader(dataset, batch_size=40, shuffle=True)
    state = torch.random.get_rng_state()
    assert check_sampler(shuffled, 0.1, seed=0).violated
    assert not check_sampler(DPDataLoader.from_data_loader(shuffled), 0.1, seed=0).violated
    assert torch.equal(state, torch.random.get_rng_state())  # the user's randomness is untouched
    first = check_sampler(DPDataLoader.from_data_loader(shuffled), 0.1, seed=3).to_dict()
    again = check_sampler(DPDataLoader.from_data_loader(shuffled), 0.1, seed=3).to_dict()
    assert first | {"seconds": 0} == again | {"seconds": 0}  # the seed fixes the loader's draws
    with pytest.raises(ValueError, match="batch_sampler"):
        check_sampler(DataLoader(dataset, batch_size=None), 0.1)


def poisson_stream(n, q, fixed=False):
    """An iterable-style dataset that samples itself: each pass yields (record id, x) for the records drawn
    with probability q (fixed: a shuffled sample of exactly q n), from torch's generator (seeded by the check)."""
    torch = pytest.importorskip("torch")

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            if fixed:
                chosen = torch.randperm(n)[: round(q * n)]
            else:
                chosen = torch.nonzero(torch.rand(n) < q).reshape(-1)
            for i in chosen.tolist():
                yield i, torch.zeros(2)

    return Stream()


def test_iterable_style_loaders_are_refused_with_the_fix_and_checked_through_record_ids():
    torch = pytest.importorskip("torch")
    from dpaudit.training import RecordIdBatches

    loader = torch.utils.data.DataLoader(poisson_stream(400, 0.1), batch_size=None)
    with pytest.raises(ValueError, match="RecordIdBatches"):
        check_sampler(loader, 0.1, records=400)
    # one pass of the stream is one Poisson batch: a loader of whole passes
    poisson = torch.utils.data.DataLoader(poisson_stream(400, 0.1), batch_size=1000)
    assert not check_sampler(RecordIdBatches(poisson), 0.1, records=400, epochs=30, seed=1).violated
    fixed = torch.utils.data.DataLoader(poisson_stream(400, 0.1, fixed=True), batch_size=1000)
    assert check_sampler(RecordIdBatches(fixed), 0.1, records=400, epochs=30, seed=1).violated
    with pytest.raises(ValueError, match="ids"):
        check_sampler(RecordIdBatches(poisson, ids=lambda batch: batch[1]), 0.1, records=400)


def test_an_iterable_style_dataset_cannot_take_canaries():
    pytest.importorskip("opacus")
    from dpaudit import training

    with pytest.raises(TypeError, match="map-style"):
        training.audit_opacus(lambda data, seed, hooks: None, dataset=poisson_stream(10, 0.5), canaries=4)
