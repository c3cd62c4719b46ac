"""Module-level mechanism instances for the ``dpaudit audit --curve`` tests (loaded as module:object)."""

from __future__ import annotations

from dpaudit.accountant import analytic_gaussian_sigma
from dpaudit.mechanisms import GaussianMechanism

#: Correct: declares Gaussian(sigma), exactly (1/sigma)-GDP.
gaussian = GaussianMechanism(1.0, 1e-5)
#: Half the noise, but the declared event of the correct mechanism (a mis-calibration to catch).
half_sigma = GaussianMechanism.from_sigma(analytic_gaussian_sigma(1.0, 1e-5) / 2, 1e-5)
half_sigma.event = gaussian.event
#: 30% less noise than ``gaussian`` and no declared event: still well inside a generous claim (mu = 1), but
#: a regression against a baseline of ``gaussian`` (the gate's curve baselines).
less_noise = GaussianMechanism.from_sigma(analytic_gaussian_sigma(1.0, 1e-5) * 0.7, 1e-5)
less_noise.event = None
