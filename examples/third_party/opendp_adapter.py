"""OpenDP measurements under audit, through ``dpaudit.adapters.opendp``; each claim is the measurement's
own privacy map at ``d_in``.

OpenDP samples from its own secure generator, which cannot be seeded: these audits are not
reproducible, and every result says so in its warnings. Vector measurements that add independent
noise per element are audited ``elementwise`` (one call per batch).
"""

from __future__ import annotations

from cases import Case

import opendp.prelude as dp  # noqa: E402  (optional dependency: dpaudit[opendp])

from dpaudit.adapters import opendp

dp.enable_features("contrib")

_FLOATS = dp.vector_domain(dp.atom_domain(T=float, nan=False))
_INTS = dp.vector_domain(dp.atom_domain(T=int))


def _case(name, measurement, d_in, pairs, claim, **options) -> Case:
    adapted = opendp(measurement, d_in=d_in, elementwise=options.pop("elementwise", False))
    return Case(name, adapted, adapted.privacy.epsilon, 0.0, pairs, claim, **options)


def cases() -> list[Case]:
    clamped_sum = (_FLOATS, dp.symmetric_distance()) >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum() >> dp.m.then_laplace(scale=1.0)
    return [
        _case("OpenDP make_laplace", dp.m.make_laplace(_FLOATS, dp.l1_distance(T=float), scale=1.0), 1.0, [(0.0, 1.0)],
              "privacy map at d_in = 1 (scale 1)", elementwise=True, samples=200_000),
        _case("OpenDP make_geometric", dp.m.make_geometric(_INTS, dp.l1_distance(T=int), scale=1.0), 1, [(0, 1)],
              "privacy map at d_in = 1 (scale 1)", elementwise=True, samples=200_000),
        _case("OpenDP make_randomized_response_bool", dp.m.make_randomized_response_bool(prob=0.75), 1, [(0, 1)],
              "privacy map (prob 0.75: ln 3)", samples=200_000),
        _case("OpenDP make_noisy_max", dp.m.make_noisy_max(_FLOATS, dp.linf_distance(T=float), dp.max_divergence(), scale=2.0),
              1.0, [([1.0] * 5, [0.0, 2.0, 2.0, 2.0, 2.0])], "privacy map at d_in = 1 (scale 2)", samples=200_000),
        _case("OpenDP clamp >> sum >> laplace", clamped_sum, 1, [([0.5, 0.5], [0.5, 0.5, 5.0]), ([0.0, 0.0], [0.0, 0.0, 1.0])],
              "privacy map at d_in = 1 (add/remove)", samples=100_000),
    ]
