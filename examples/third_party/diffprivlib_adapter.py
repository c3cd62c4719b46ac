"""IBM diffprivlib mechanisms under audit, through ``dpaudit.adapters.diffprivlib``.

The adapter seeds every batch through diffprivlib's ``random_state``, so these audits are reproducible.
Each case's claim is the guarantee the mechanism states (``mechanism.privacy``).
"""

from __future__ import annotations

import warnings

from cases import Case

import diffprivlib.mechanisms as mechanisms  # noqa: E402  (optional dependency: dpaudit[diffprivlib])
import diffprivlib.tools as tools  # noqa: E402

from dpaudit.adapters import diffprivlib

warnings.filterwarnings("ignore", module="diffprivlib")

EPSILON = 1.0


def _case(name, mechanism, pairs, claim, **options) -> Case:
    adapted = diffprivlib(mechanism, **options.pop("tool_arguments", {}))
    return Case(name, adapted, adapted.privacy.epsilon, adapted.privacy.delta, pairs, claim, **options)


def cases() -> list[Case]:
    scalar_pair = [(0.0, 1.0)]
    utilities = [([1, 1, 1, 1, 1], [0, 2, 2, 2, 2])]
    return [
        _case("diffprivlib Laplace", mechanisms.Laplace(epsilon=EPSILON, sensitivity=1.0), scalar_pair,
              "Laplace(epsilon=1, sensitivity=1)"),
        _case("diffprivlib Geometric", mechanisms.Geometric(epsilon=EPSILON, sensitivity=1), [(0, 1)],
              "Geometric(epsilon=1, sensitivity=1)"),
        _case("diffprivlib GaussianAnalytic", mechanisms.GaussianAnalytic(epsilon=EPSILON, delta=1e-5, sensitivity=1.0),
              scalar_pair, "GaussianAnalytic(epsilon=1, delta=1e-5, sensitivity=1)"),
        _case("diffprivlib Snapping", mechanisms.Snapping(epsilon=EPSILON, sensitivity=1.0, lower=-10.0, upper=10.0),
              scalar_pair, "Snapping(epsilon=1, sensitivity=1, bounds [-10, 10])"),
        _case("diffprivlib Staircase", mechanisms.Staircase(epsilon=EPSILON, sensitivity=1.0), scalar_pair,
              "Staircase(epsilon=1, sensitivity=1)"),
        _case("diffprivlib Binary", mechanisms.Binary(epsilon=EPSILON, value0="0", value1="1"), [(0, 1)], "Binary(epsilon=1)"),
        _case("diffprivlib Exponential", mechanisms.Exponential(epsilon=EPSILON, sensitivity=1.0, utility=[0.0]), utilities,
              "Exponential(epsilon=1, sensitivity=1), utilities move by <= 1"),
        _case("diffprivlib PermuteAndFlip", mechanisms.PermuteAndFlip(epsilon=EPSILON, sensitivity=1.0, utility=[0.0]),
              utilities, "PermuteAndFlip(epsilon=1, sensitivity=1)"),
        _case("diffprivlib tools.mean (replace-one)", tools.mean, [([0.0] * 10, [1.0] + [0.0] * 9)],
              "tools.mean(epsilon=1, bounds=(0, 1))", tool_arguments=dict(epsilon=EPSILON, bounds=(0.0, 1.0)),
              relation="replace_one", samples=200_000),
        _case("diffprivlib tools.mean (add/remove)", tools.mean, [([0.0], [0.0, 1.0]), ([1.0], [1.0, 0.0]), ([0.0] * 10, [0.0] * 10 + [1.0])],
              "tools.mean(epsilon=1, bounds=(0, 1))", tool_arguments=dict(epsilon=EPSILON, bounds=(0.0, 1.0)),
              relation="add_remove", expect_violation=True, samples=200_000,
              note="the noise scale (upper - lower)/n depends on n, so under add/remove the mean is not 1-DP "
                   "(on [0] vs [0, 1] the density ratio reaches e^(1 + ln 2 - 1/2) = e^1.19 near 0.5); it is DP when n is "
                   "public (replace-one), which is how diffprivlib documents it"),
    ]
