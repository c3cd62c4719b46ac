"""An accountant with Opacus' interface, so Opacus users can drop it in.

Opacus' accountants (``opacus.accountants.RDPAccountant``, ``PRVAccountant``) are driven by the optimizer:
``step(noise_multiplier=..., sample_rate=...)`` once per DP-SGD step, ``get_epsilon(delta)`` at any time,
``history`` a list of ``(noise_multiplier, sample_rate, num_steps)`` with consecutive equal steps merged.
Conventions match: the noise multiplier is relative to the per-sample clipping norm (one record's L2
contribution bound C) and neighbours are add/remove-one with Poisson sampling, so a step is
``PoissonSampled(sample_rate, Gaussian(noise_multiplier))``.

Example:
    >>> acct = OpacusAccountant()
    >>> for _ in range(1000):
    ...     acct.step(noise_multiplier=1.0, sample_rate=0.01)
    >>> acct.history
    [(1.0, 0.01, 1000)]
    >>> round(acct.get_epsilon(delta=1e-5), 2)
    1.83
"""

from __future__ import annotations

from typing import Any

from .._validation import check_choice, check_delta, check_positive, check_sampling_probability
from ..events import Composed, Gaussian, PoissonSampled, PrivacyEvent, SelfComposed, check_neighbouring

__all__ = ["OpacusAccountant"]


class OpacusAccountant:
    """Opacus-style DP-SGD accountant backed by dpaudit's PLD (default), RDP or zCDP accountant.

    Args:
        mechanism: "pld" (default, tight), "rdp" or "zcdp" (zCDP refuses sampling below 1).
        neighbouring: "add_remove" (default, Opacus' convention) or "replace_one".
    """

    def __init__(self, mechanism: str = "pld", neighbouring: str = "add_remove") -> None:
        self._mechanism = check_choice(mechanism, "mechanism", ("pld", "rdp", "zcdp"))
        self.neighbouring = check_neighbouring(neighbouring)
        self.history: list[tuple[float, float, int]] = []
        self._cache: tuple[tuple, Any] | None = None

    def mechanism(self) -> str:
        """The backing accountant's name ("pld", "rdp" or "zcdp")."""
        return self._mechanism

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one DP-SGD step (validated before the history changes)."""
        noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
        sample_rate = check_sampling_probability(sample_rate, "sample_rate")
        if self._mechanism == "zcdp" and sample_rate < 1.0:
            from ..errors import UnsupportedEventError

            raise UnsupportedEventError("ZCDPAccountant cannot account for a subsampled step (sample_rate < 1); "
                                        "use mechanism='pld' or 'rdp'")
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            self.history[-1] = (noise_multiplier, sample_rate, self.history[-1][2] + 1)
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def __len__(self) -> int:
        """Number of steps taken."""
        return sum(count for _, _, count in self.history)

    def event(self) -> PrivacyEvent | None:
        """The composed privacy event of the history (None before the first step)."""
        parts = [SelfComposed(PoissonSampled(rate, Gaussian(sigma)), count) for sigma, rate, count in self.history]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Composed(parts)

    def _accountant(self) -> Any:
        key = tuple(self.history)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        from . import PLDAccountant, RDPAccountant, ZCDPAccountant

        kind = {"pld": PLDAccountant, "rdp": RDPAccountant, "zcdp": ZCDPAccountant}[self._mechanism]
        accountant = kind(neighbouring=self.neighbouring)
        event = self.event()
        if event is not None:
            accountant.compose(event)
        self._cache = (key, accountant)
        return accountant

    def get_epsilon(self, delta: float, **_: Any) -> float:
        """Upper bound on epsilon at ``delta`` for the steps so far (extra Opacus keywords are ignored)."""
        delta = check_delta(delta, "delta")
        return self._accountant().epsilon(delta)

    def get_privacy_spent(self, *, delta: float, **_: Any) -> tuple[float, None]:
        """(epsilon, None): Opacus' RDP accountant returns (epsilon, best order); there is no order here."""
        return self.get_epsilon(delta), None

    def get_delta(self, epsilon: float) -> float:
        """Upper bound on delta at ``epsilon`` for the steps so far."""
        return self._accountant().delta(epsilon)

    def state_dict(self) -> dict[str, Any]:
        """The history, as Opacus' accountants save it."""
        return {"history": list(self.history), "mechanism": self._mechanism, "neighbouring": self.neighbouring}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a history saved by :meth:`state_dict` (validated before anything changes)."""
        fresh = OpacusAccountant(state.get("mechanism", self._mechanism), state.get("neighbouring", self.neighbouring))
        for sigma, rate, count in state["history"]:
            for _ in range(int(count)):
                fresh.step(noise_multiplier=sigma, sample_rate=rate)
        self._mechanism, self.neighbouring, self.history, self._cache = fresh._mechanism, fresh.neighbouring, fresh.history, None

    def __repr__(self) -> str:
        return f"OpacusAccountant(mechanism={self._mechanism!r}, steps={len(self)})"
