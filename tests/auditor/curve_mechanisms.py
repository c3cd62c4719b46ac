"""Module-level mechanism instances for the ``dpaudit audit --curve`` tests (loaded as module:object)."""

from __future__ import annotations

from dpaudit.accountant import analytic_gaussian_sigma
from dpaudit.mechanisms import GaussianMechanism

#: Correct: declares Gaussian(sigma), exactly (1/sigma)-GDP.
gaussian = GaussianMechanism(1.0, 1e-5)
#: Half the noise, but the declared event of the correct mechanism (a mis-calibration to catch).
half_sigma = GaussianMechanism.from_sigma(analytic_gaussian_sigma(1.0, 1e-5) / 2, 1e-5)
half_sigma.event = gaussian.event
