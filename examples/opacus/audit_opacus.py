"""Audit an Opacus training end to end on a CPU (about a minute): the claim read from the engine, the
sampler checked, one run witnessed, a one-run white-box audit, a many-run black-box audit, and a caught bug.

Run from the repository root: python examples/opacus/audit_opacus.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
warnings.filterwarnings("ignore", category=UserWarning)  # Opacus and torch notes (secure RNG, backward hooks)

import stack  # noqa: E402

from dpaudit import training  # noqa: E402
from dpaudit.training import corpus  # noqa: E402


def main() -> None:
    torch.set_num_threads(1)
    data = stack.dataset()

    # 1. The loader as it really samples: Opacus' Poisson loader passes, a shuffled one does not.
    from opacus.data_loader import DPDataLoader

    print(training.check_sampler(DPDataLoader.from_data_loader(stack.make_data_loader(data)), sample_rate=0.1, seed=0).summary())
    shuffled = torch.utils.data.DataLoader(data, batch_size=50, shuffle=True)
    print(training.check_sampler(shuffled, sample_rate=0.1, seed=0).summary())

    # 2. One run witnessed, no canaries: every record read, clip, noisy step and update checked against the
    #    claim (audit_opacus below runs this first too).
    print(training.witness_run(stack.train, dataset=data, seed=0).summary())

    # 3. One run with 500 white-box Dirac gradient canaries (each in with probability 1/2).
    result = training.audit_opacus(stack.train, dataset=data, canaries=500, seed=0)
    print(result.summary())

    # 4. Many runs with and without one mislabelled canary (black-box: the final model's loss).
    result = training.audit_opacus(
        dataset=data, make_model=stack.make_model, make_optimizer=stack.make_optimizer,
        make_data_loader=stack.make_data_loader, noise_multiplier=1.0, max_grad_norm=1.0, epochs=5,
        canary="mislabelled", runs=40, seed=0, workers=2)
    print(result.summary())

    # 5. A caught bug from the corpus: per-sample clipping silently off.
    verdict = corpus.check_case("clipping_off", seed=0, canaries=500, records=500)
    print("clipping_off flagged:", verdict.flagged)
    print(verdict.white_box.summary())


if __name__ == "__main__":
    main()
