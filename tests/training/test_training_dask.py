"""Many-run training audits on a Dask LocalCluster: one run per task, the same numbers as in this process and
in a process pool, and a clear refusal of multi-threaded workers (torch's generator is process-wide)."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("opacus")

from dpaudit import training  # noqa: E402

from . import tiny_stack  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


def audit(**kwargs):
    return training.audit_opacus(dataset=tiny_stack.dataset(), make_model=tiny_stack.make_model,
                                 make_optimizer=tiny_stack.make_optimizer, make_data_loader=tiny_stack.full_batch,
                                 noise_multiplier=1.0, max_grad_norm=1.0, epochs=3, runs=8, seed=5, check_seed=False,
                                 **kwargs)


def numbers(result):
    data = result.to_dict()
    data.pop("seconds")
    data["audit"].pop("seconds", None)
    return data


def test_runs_on_a_cluster_give_the_serial_and_process_pool_numbers():
    # one single-threaded worker inside this process: the real scheduler and task path without paying for
    # worker processes that import torch (tests/test_dask.py covers process workers)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=50) as cluster:
        on_cluster = audit(scheduler=cluster.scheduler_address)
    assert numbers(on_cluster) == numbers(audit()) == numbers(audit(workers=2))
    assert on_cluster.runs == 8 and on_cluster.mode == "many_runs"


def test_multi_threaded_workers_are_refused():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                                  silence_logs=50) as cluster:
        with pytest.raises(ValueError, match="threads_per_worker=1"):
            audit(scheduler=cluster.scheduler_address)
