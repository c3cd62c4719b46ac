"""An accountant with Opacus' interface, so Opacus users can drop it in.

Opacus' accountants (``opacus.accountants.RDPAccountant``, ``PRVAccountant``) are driven by the optimizer:
``step(noise_multiplier=..., sample_rate=...)`` once per DP-SGD step, ``get_epsilon(delta)`` at any time,
``history`` a list of ``(noise_multiplier, sample_rate, num_steps)`` with consecutive equal steps merged.
Conventions match: the noise multiplier is relative to the per-sample clipping norm (one record's L2
contribution bound C) and neighbours are add/remove-one with Poisson sampling, so a step is
``PoissonSampled(sample_rate, Gaussian(noise_multiplier))`` (a plain ``Gaussian`` when sample_rate is 1).

It also has the interface every dpaudit accountant shares (``compose``, ``supports``, ``epsilon``,
``delta``, ``profile``, ``tradeoff``, ``rdp``, ``rho``), answered by the backing accountant; ``compose``
accepts the event trees that are sequences of such steps.

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

from .._validation import check_choice, check_delta, check_epsilon, check_positive, check_positive_int, check_sampling_probability
from ..errors import InvalidArgument, UnsupportedEventError
from ..events import (
    Composed,
    Gaussian,
    PoissonSampled,
    PrivacyEvent,
    SelfComposed,
    check_event,
    check_neighbouring,
)
from .risk import AttackRiskReadouts

__all__ = ["OpacusAccountant"]

_Step = tuple[float, float, int]


def _steps(event: PrivacyEvent, count: int) -> list[_Step]:
    """(noise_multiplier, sample_rate, count) of the DP-SGD steps an event tree consists of; raises
    UnsupportedEventError naming the first node that is not such a step. A SelfComposed block of several
    step types is recorded type by type (the order of steps does not change the guarantee)."""
    if isinstance(event, SelfComposed):
        return _steps(event.event, count * event.count)
    if isinstance(event, Composed):
        out: list[_Step] = []
        for child in event.events:
            out.extend(_steps(child, count))
        return out
    rate = 1.0
    inner = event
    while isinstance(inner, PoissonSampled):
        rate *= inner.sampling_probability
        inner = inner.event
    if isinstance(inner, Gaussian):
        return [(inner.noise_multiplier, rate, count)]
    raise UnsupportedEventError(f"OpacusAccountant cannot account for {event!r}: only DP-SGD steps "
                                "(Gaussian or PoissonSampled(q, Gaussian)), composed or repeated, are Opacus steps")


class OpacusAccountant(AttackRiskReadouts):
    """Opacus-style DP-SGD accountant backed by dpaudit's PLD (default), RDP or zCDP accountant.

    Args:
        mechanism: "pld" (default, tight), "rdp" or "zcdp" (zCDP refuses sampling below 1).
        neighbouring: "add_remove" (default, Opacus' convention) or "replace_one".
    """

    def __init__(self, mechanism: str = "pld", neighbouring: str = "add_remove") -> None:
        self._mechanism = check_choice(mechanism, "mechanism", ("pld", "rdp", "zcdp"))
        self.neighbouring = check_neighbouring(neighbouring)
        self.history: list[_Step] = []
        self._cache: tuple[tuple, Any] | None = None

    def mechanism(self) -> str:
        """The backing accountant's name ("pld", "rdp" or "zcdp")."""
        return self._mechanism

    # ------------------------------------------------------------------ recording steps
    def _validated(self, noise_multiplier: Any, sample_rate: Any) -> tuple[float, float]:
        noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
        sample_rate = check_sampling_probability(sample_rate, "sample_rate")
        if self._mechanism == "zcdp" and sample_rate < 1.0:
            raise UnsupportedEventError("ZCDPAccountant cannot account for a subsampled step (sample_rate < 1); "
                                        "use mechanism='pld' or 'rdp'")
        return noise_multiplier, sample_rate

    def _record(self, steps: list[_Step]) -> None:
        for sigma, rate, count in steps:
            if self.history and self.history[-1][:2] == (sigma, rate):
                self.history[-1] = (sigma, rate, self.history[-1][2] + count)
            else:
                self.history.append((sigma, rate, count))

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one DP-SGD step (validated before the history changes)."""
        self._record([(*self._validated(noise_multiplier, sample_rate), 1)])

    def compose(self, event: PrivacyEvent, count: int = 1) -> OpacusAccountant:
        """Record ``count`` runs of an event tree made of DP-SGD steps (see :meth:`supports`); the whole tree
        is checked before the history changes."""
        steps = _steps(check_event(event), check_positive_int(count, "count"))
        self._record([(*self._validated(sigma, rate), n) for sigma, rate, n in steps])
        return self

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether :meth:`compose` would accept ``event``: a tree of Gaussian / PoissonSampled Gaussian steps
        (composed or repeated) that the backing accountant supports (nothing is recorded)."""
        try:
            for sigma, rate, _ in _steps(check_event(event), 1):
                self._validated(sigma, rate)
        except (UnsupportedEventError, InvalidArgument):
            return False
        return True

    def __len__(self) -> int:
        """Number of steps taken."""
        return sum(count for _, _, count in self.history)

    def event(self) -> PrivacyEvent | None:
        """The composed privacy event of the history (None before the first step)."""
        parts = [SelfComposed(Gaussian(sigma) if rate == 1.0 else PoissonSampled(rate, Gaussian(sigma)), count)
                 for sigma, rate, count in self.history]
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

    # ------------------------------------------------------------------ Opacus' read-outs
    def get_epsilon(self, delta: float, **_: Any) -> float:
        """Upper bound on epsilon at ``delta`` for the steps so far (extra Opacus keywords are ignored)."""
        delta = check_delta(delta, "delta")
        return self._accountant().epsilon(delta)

    def get_privacy_spent(self, *, delta: float, **_: Any) -> tuple[float, None]:
        """(epsilon, None): Opacus' RDP accountant returns (epsilon, best order); there is no order here."""
        return self.get_epsilon(delta), None

    def get_delta(self, epsilon: float) -> float:
        """Upper bound on delta at ``epsilon`` for the steps so far."""
        epsilon = check_epsilon(epsilon, "epsilon")
        return self._accountant().delta(epsilon)

    # ------------------------------------------------------------------ the shared accountant interface
    def epsilon(self, target_delta: float) -> float:
        """Upper bound on the smallest epsilon with the steps so far (epsilon, target_delta)-DP."""
        target_delta = check_delta(target_delta, "target_delta")
        return self._accountant().epsilon(target_delta)

    def delta(self, target_epsilon: float) -> float:
        """Upper bound on the smallest delta with the steps so far (target_epsilon, delta)-DP."""
        target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
        return self._accountant().delta(target_epsilon)

    def profile(self, epsilons: Any) -> Any:
        """delta(epsilon) at each epsilon (ndarray of upper bounds), from the backing accountant."""
        return self._accountant().profile(epsilons)

    def tradeoff(self, alphas: Any) -> Any:
        """f(alpha) the steps so far guarantee (a lower bound on the true trade-off function)."""
        return self._accountant().tradeoff(alphas)

    def rdp(self, orders: Any) -> Any:
        """Renyi-DP curve (upper bound) at ``orders`` (each > 1); +inf where the backing accountant has none."""
        return self._accountant().rdp(orders)

    def rho(self) -> float:
        """zCDP parameter of the steps so far (inf once a step is subsampled)."""
        return self._accountant().rho()

    def _risk_source(self) -> Any:
        """Attack-risk read-outs (``tpr_at_fpr``, ``advantage``) come from the backing accountant."""
        return self._accountant()

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """The history, as Opacus' accountants save it."""
        return {"history": list(self.history), "mechanism": self._mechanism, "neighbouring": self.neighbouring}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a history saved by :meth:`state_dict` (validated before anything changes)."""
        if not isinstance(state, dict) or "history" not in state:
            raise InvalidArgument("state", "state must be a dict with a 'history' list, as state_dict() returns")
        fresh = OpacusAccountant(state.get("mechanism", self._mechanism), state.get("neighbouring", self.neighbouring))
        try:
            entries = [(sigma, rate, count) for sigma, rate, count in state["history"]]
        except (TypeError, ValueError):
            raise InvalidArgument("state", "state['history'] must be a list of (noise_multiplier, sample_rate, "
                                           "num_steps) triples") from None
        fresh._record([(*fresh._validated(sigma, rate), check_positive_int(count, "num_steps"))
                       for sigma, rate, count in entries])
        self._mechanism, self.neighbouring, self.history, self._cache = fresh._mechanism, fresh.neighbouring, fresh.history, None

    def __repr__(self) -> str:
        return f"OpacusAccountant(mechanism={self._mechanism!r}, steps={len(self)})"
