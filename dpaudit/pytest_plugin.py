"""pytest plugin: statistical DP tests with one false-alarm budget for the whole run.

Enabled by installing dpaudit (entry point ``pytest11``: ``dpaudit = dpaudit.pytest_plugin``); with
plugin autoloading off (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``) enable it with ``-p dpaudit``, which works
either way (``-p dpaudit.pytest_plugin`` also works then, but not together with autoloading: pytest would
register the module twice). Disable it with ``-p no:dpaudit``. A test becomes a DP test by using the
``dp_audit`` fixture or carrying the ``@pytest.mark.dp_audit`` marker::

    def test_laplace_is_dp(dp_audit):
        dp_audit(my_mechanism, d=[0.0], d_prime=[1.0], epsilon=1.0)

    @pytest.mark.dp_audit(audits=2, samples=50_000)
    def test_two_claims(dp_audit):
        dp_audit(mechanism_a, [0], [1], epsilon=1.0)
        dp_audit(mechanism_b, [0], [1], epsilon=0.5)

Training stacks are audited like the gate's ``[[training_audit]]`` entries (canaries planted, the claim
read from the PrivacyEngine unless given; one audit of the test's share)::

    def test_opacus_training_is_dp(dp_audit):
        dp_audit.training(train, dataset=data, canaries=500)          # or runs=200, claim=2.0, canary=...

False alarms. With ``--dp-false-alarm-rate a`` (default 0.01) and A audits declared over all the DP
tests collected (one per test unless the marker says ``audits=k``), every audit runs at confidence
1 - a/A. A correct mechanism fails an audit with probability at most a/A, so by the union bound the
run fails spuriously with probability at most a, however many DP tests it holds. Deselected tests
(``-k``, ``-m``) are not counted, so each remaining test gets a larger share.

Reproducibility. Each audit's seed is derived from ``--dp-seed`` (default 0), the test's node id and
the audit's index in the test: reruns of the same selection give the same results.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

__all__ = ["DPAudit", "DPReplay", "DPAuditSettings", "MARKER_ARGUMENTS", "DEFAULT_FALSE_ALARM_RATE", "DEFAULT_SAMPLES"]

DEFAULT_FALSE_ALARM_RATE = 0.01
DEFAULT_SAMPLES = 200_000
MIN_SAMPLES = 200
MARKER_ARGUMENTS = ("audits", "samples")
_SETTINGS_KEY = pytest.StashKey["DPAuditSettings"]()
_AUDITS_KEY = pytest.StashKey[int]()


@dataclass
class DPAuditSettings:
    """The run's settings and the false-alarm split (filled in after collection)."""

    false_alarm_rate: float
    seed: int
    samples: int | None
    fixed_budget: bool = False  # every audit draws its whole budget (--dp-fixed-budget); else they stop early
    total_audits: int = 0
    dp_tests: int = 0
    audits_run: int = 0
    violations: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        """The false-alarm probability of one audit: the run's rate over every audit declared."""
        return self.false_alarm_rate / max(self.total_audits, 1)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dpaudit", "differential-privacy audits (dpaudit)")
    group.addoption("--dp-samples", type=int, default=None, metavar="N",
                    help="samples per input of each DP audit that sets none itself (a marker's or a call's samples= wins; default: "
                         f"the ini value, else {DEFAULT_SAMPLES:,})")
    group.addoption("--dp-seed", type=int, default=None, metavar="SEED",
                    help="base seed; each audit's seed is derived from it and the test's node id (default 0)")
    group.addoption("--dp-false-alarm-rate", type=float, default=None, metavar="RATE",
                    help="probability that a run of correct mechanisms fails anywhere, split over all DP audits collected "
                         f"(default {DEFAULT_FALSE_ALARM_RATE})")
    group.addoption("--dp-fixed-budget", action="store_true", default=None,
                    help="every DP audit draws its whole sample budget (default: audits are sequential and stop early on a "
                         "certified violation or when their budget cannot certify one)")
    parser.addini("dp_samples", "default samples per input of each DP audit", default=None)
    parser.addini("dp_fixed_budget", "every DP audit draws its whole sample budget (true/false)", default=None)
    parser.addini("dp_seed", "base seed of the DP audits", default=None)
    parser.addini("dp_false_alarm_rate", "run-wide false-alarm rate of the DP audits", default=None)


def _setting(config: pytest.Config, option: str, ini: str, kind: type, default: Any) -> tuple[Any, str] | None:
    """(value, where it came from) of a command-line option, else of its ini key, else ``default``."""
    value = config.getoption(option)
    source = f"--{option.replace('_', '-')}"
    if value is None:
        raw = config.getini(ini)
        if raw in (None, ""):
            return default
        source = f"ini option {ini}"
        try:
            value = kind(str(raw).strip().replace("_", ""))
        except ValueError:
            raise pytest.UsageError(f"dpaudit: {source}={raw!r} must be a {kind.__name__}") from None
    return value, source


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "dp_audit(audits=1, samples=None): a differential-privacy test; `audits` is how many "
                            "dp_audit calls it makes (its share of the run's false-alarm rate is split over them), `samples` "
                            "its samples per input")
    rate = _setting(config, "dp_false_alarm_rate", "dp_false_alarm_rate", float, None)
    seed = _setting(config, "dp_seed", "dp_seed", int, None)
    samples = _setting(config, "dp_samples", "dp_samples", int, None)
    if rate is not None and not 0.0 < rate[0] < 1.0:
        raise pytest.UsageError(f"dpaudit: {rate[1]}={rate[0]} must be in (0, 1)")
    if seed is not None and seed[0] < 0:
        raise pytest.UsageError(f"dpaudit: {seed[1]}={seed[0]} must be >= 0")
    if samples is not None and samples[0] < MIN_SAMPLES:
        raise pytest.UsageError(f"dpaudit: {samples[1]}={samples[0]} must be >= {MIN_SAMPLES}")
    fixed = _setting(config, "dp_fixed_budget", "dp_fixed_budget", boolean, None)
    config.stash[_SETTINGS_KEY] = DPAuditSettings(
        false_alarm_rate=rate[0] if rate else DEFAULT_FALSE_ALARM_RATE, seed=seed[0] if seed else 0,
        samples=samples[0] if samples else None, fixed_budget=bool(fixed and fixed[0]))


def boolean(text: str) -> bool:
    """An ini boolean: true/false, yes/no, 1/0 (ValueError otherwise)."""
    value = text.strip().lower()
    if value in ("true", "yes", "1", "on"):
        return True
    if value in ("false", "no", "0", "off"):
        return False
    raise ValueError(text)


def _marker_arguments(item: pytest.Item) -> dict[str, Any]:
    """The dp_audit marker's arguments of a test, validated (pytest.UsageError naming test and argument)."""
    arguments: dict[str, Any] = {}
    for marker in reversed(list(item.iter_markers("dp_audit"))):  # the closest marker wins
        where = f"{item.nodeid}: @pytest.mark.dp_audit"
        if marker.args:
            raise pytest.UsageError(f"{where} takes keyword arguments only ({', '.join(MARKER_ARGUMENTS)}), got positional "
                                    f"{marker.args!r}")
        unknown = sorted(set(marker.kwargs) - set(MARKER_ARGUMENTS))
        if unknown:
            raise pytest.UsageError(f"{where}: unknown argument {unknown[0]!r} (allowed: {', '.join(MARKER_ARGUMENTS)}); "
                                    "the mechanism, inputs and claim go to the dp_audit fixture call")
        arguments.update(marker.kwargs)
    for name, low in (("audits", 1), ("samples", MIN_SAMPLES)):
        if name not in arguments or (name == "samples" and arguments[name] is None):
            continue
        value = arguments[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.dp_audit: {name}={value!r} must be an integer >= {low}")
    return arguments


def _is_dp_test(item: pytest.Item) -> bool:
    return "dp_audit" in getattr(item, "fixturenames", ()) or item.get_closest_marker("dp_audit") is not None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Count the DP audits of the tests that will run (after deselection) and validate their markers."""
    settings = config.stash[_SETTINGS_KEY]
    settings.total_audits = settings.dp_tests = 0
    for item in items:
        if not _is_dp_test(item):
            continue
        audits = int(_marker_arguments(item).get("audits", 1))
        item.stash[_AUDITS_KEY] = audits
        settings.dp_tests += 1
        settings.total_audits += audits


def pytest_report_header(config: pytest.Config) -> str:
    settings = config.stash[_SETTINGS_KEY]
    return (f"dpaudit: run-wide false-alarm rate {settings.false_alarm_rate:g}, seed {settings.seed}, samples "
            f"{settings.samples or 'per test (default ' + format(DEFAULT_SAMPLES, ',') + ')'}"
            + (", fixed budget" if settings.fixed_budget else ", sequential (stop early)"))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    settings = config.stash.get(_SETTINGS_KEY, None)
    if settings is None or not settings.dp_tests:
        return
    terminalreporter.write_sep("-", "dpaudit")
    terminalreporter.write_line(
        f"{settings.audits_run} DP audit(s) run of {settings.total_audits} declared in {settings.dp_tests} DP test(s); each at "
        f"confidence {1.0 - settings.share:.6g}, so a run of correct mechanisms fails with probability <= "
        f"{settings.false_alarm_rate:g} (union bound)")
    for line in settings.violations:
        terminalreporter.write_line(f"VIOLATED {line}")


def _seed(base: int, nodeid: str, index: int) -> int:
    """A 63-bit seed from the base seed, the test's node id and the audit's index (stable across runs)."""
    import numpy as np

    node = int.from_bytes(hashlib.sha256(nodeid.encode()).digest()[:16], "little")  # distinct node ids, distinct keys
    words = np.random.SeedSequence(base, spawn_key=(node, index)).generate_state(2)
    return int((int(words[0]) << 31) ^ int(words[1])) & ((1 << 63) - 1)


class DPAudit:
    """The ``dp_audit`` fixture: call it like :func:`dpaudit.audit` without ``samples``, ``confidence_level``
    and ``seed`` (the plugin sets them); a certified violation fails the test with the verdict."""

    def __init__(self, nodeid: str, settings: DPAuditSettings, audits: int, samples: int | None) -> None:
        self.nodeid = nodeid
        self.settings = settings
        self.audits = audits
        self.samples = samples if samples is not None else (settings.samples or DEFAULT_SAMPLES)
        self.calls = 0
        self.results: list[Any] = []

    @property
    def false_alarm_share(self) -> float:
        """This test's share of the run's false-alarm rate, per audit."""
        return self.settings.share

    @property
    def confidence_level(self) -> float:
        return 1.0 - self.settings.share

    def _next(self) -> tuple[int, int]:
        __tracebackhide__ = True
        if self.calls >= self.audits:
            pytest.fail(f"dp_audit was called {self.calls + 1} times but the test declares audits={self.audits}: "
                        f"add @pytest.mark.dp_audit(audits={self.calls + 1}) so the run's false-alarm rate stays split "
                        "over every audit", pytrace=False)
        index = self.calls
        self.calls += 1
        return index, _seed(self.settings.seed, self.nodeid, index)

    def __call__(self, mechanism: Callable, d: Any, d_prime: Any, epsilon: float = 1.0, delta: float = 0.0, *,
                 samples: int | None = None, **options: Any) -> Any:
        """Audit ``mechanism`` on (d, d_prime) against the claim (epsilon, delta); returns the AuditResult."""
        __tracebackhide__ = True
        from .auditor import audit

        for name in ("confidence_level", "seed"):
            if name in options:
                pytest.fail(f"dp_audit: {name} is set by the plugin (--dp-false-alarm-rate, --dp-seed), not per call",
                            pytrace=False)
        index, seed = self._next()
        options.setdefault("workers", 1)
        options.setdefault("sequential", not self.settings.fixed_budget)
        options.setdefault("stop_for_futility", options["sequential"])  # a test reads the verdict only
        result = audit(mechanism, d, d_prime, epsilon, delta, samples or self.samples, self.confidence_level, seed, **options)
        return self._verdict(result, index, f"on d={d!r}, d_prime={d_prime!r}")

    def pairs(self, mechanism: Callable, pairs: Sequence[tuple[Any, Any]], epsilon: float = 1.0, delta: float = 0.0, *,
              samples: int | None = None, **options: Any) -> Any:
        """Like the call, over several candidate pairs (screened, the most leaking certified)."""
        __tracebackhide__ = True
        from .auditor import search_pairs

        index, seed = self._next()
        options.setdefault("workers", 1)
        options.setdefault("sequential", not self.settings.fixed_budget)
        options.setdefault("stop_for_futility", options["sequential"])  # a test reads the verdict only
        found = search_pairs(mechanism, pairs, epsilon, delta, samples=samples or self.samples,
                             confidence_level=self.confidence_level, seed=seed, **options)
        return self._verdict(found.result, index, f"on d={found.pair[0]!r}, d_prime={found.pair[1]!r}")

    def training(self, train: Callable | None = None, *, dataset: Any, **options: Any) -> Any:
        """Audit a training stack (:func:`dpaudit.training.audit_opacus`: ``train`` or the factories, ``dataset``,
        ``canary``, ``runs`` or ``canaries``, ``claim``, ``delta``, ...) with the plugin's confidence and seed,
        as the gate's ``[[training_audit]]`` entries do; a certified violation (epsilon_lower above the claim,
        by default the engine's) fails the test, and with the white-box preset so does the update-scale check
        (the audit's false-alarm share split evenly over its statistical checks), and so does a check of the run
        witnessed first. Returns the TrainingAuditResult."""
        __tracebackhide__ = True
        from .training import audit_opacus

        for name in ("confidence_level", "seed"):
            if name in options:
                pytest.fail(f"dp_audit.training: {name} is set by the plugin (--dp-false-alarm-rate, --dp-seed), not per "
                            "call", pytrace=False)
        if "false_alarm_rate" in options:
            pytest.fail("dp_audit.training: false_alarm_rate is set by the plugin (--dp-false-alarm-rate), not per call",
                        pytrace=False)
        index, seed = self._next()
        share = 1.0 - self.confidence_level  # flagged holds it, split over the audit's statistical checks
        result = audit_opacus(train, dataset=dataset, confidence_level=1.0 - share, seed=seed,
                              false_alarm_rate=share, **options)
        self.settings.audits_run += 1
        self.results.append(result)
        if result.flagged:
            found = (f"training epsilon >= {result.epsilon_lower:.4f} > claimed {result.epsilon_upper:.4g}" if result.violated
                     else f"flagged by {', '.join(result.failed)}")
            self.settings.violations.append(f"{self.nodeid}: {found}")
            pytest.fail(f"differential privacy VIOLATED by the training stack (audit {index + 1} of {self.audits} in this "
                        f"test)\n{result.summary()}\n  the run's false-alarm rate {self.settings.false_alarm_rate:g} is split "
                        f"over {self.settings.total_audits} audit(s): a correct stack fails here with probability <= "
                        f"{self.settings.share:.3g}", pytrace=False)
        return result

    def _verdict(self, result: Any, index: int, where: str) -> Any:
        __tracebackhide__ = True
        self.settings.audits_run += 1
        self.results.append(result)
        if result.violated:
            self.settings.violations.append(f"{self.nodeid}: epsilon >= {result.epsilon_lower:.4f} > claimed {result.epsilon:g}")
            pytest.fail(
                f"differential privacy VIOLATED {where} (audit {index + 1} of {self.audits} in this test)\n"
                f"  verdict: epsilon >= {result.epsilon_lower:.4f} with confidence {result.confidence_level:.6g}, "
                f"claimed epsilon {result.epsilon:g}, delta {result.delta:g}\n"
                f"  witness: {result.event} [{result.direction}]\n"
                f"  counts: {result.count_p} vs {result.count_q} of {result.certification_samples} certification samples "
                f"per input (ceiling {result.ceiling:.3g}, seed {result.seed})"
                + "".join(f"\n  warning: {w}" for w in result.warnings)
                + f"\n  the run's false-alarm rate {self.settings.false_alarm_rate:g} is split over {self.settings.total_audits} "
                  "audit(s): a correct mechanism fails here with probability <= "
                  f"{self.settings.share:.3g}", pytrace=False)
        return result


@pytest.fixture
def dp_audit(request: pytest.FixtureRequest) -> DPAudit:
    """Run DP audits in a test with the run's false-alarm split and a seed derived from the node id."""
    settings = request.config.stash[_SETTINGS_KEY]
    item = request.node
    audits = item.stash.get(_AUDITS_KEY, None)
    if audits is None:  # requested dynamically: counting it now would overspend the shares already given out
        pytest.fail(f"{item.nodeid} requests the dp_audit fixture dynamically, so it was not counted when the run's "
                    "false-alarm rate was split: mark the test @pytest.mark.dp_audit (or take dp_audit as an argument)",
                    pytrace=False)
    samples = _marker_arguments(item).get("samples")
    return DPAudit(item.nodeid, settings, audits, samples)


class DPReplay:
    """The ``dp_replay`` fixture: call it like :func:`dpaudit.replay.replay` (or ``.pairs`` like
    :func:`~dpaudit.replay.replay_pairs`) without ``seed`` (derived from ``--dp-seed`` and the node id). A
    replay violation is deterministic (no false-alarm share is spent) and fails the test; a control-flow
    divergence or an undecided pair does not (audit those with ``dp_audit``)."""

    def __init__(self, nodeid: str, seed: int) -> None:
        self.nodeid, self.seed, self.results = nodeid, seed, []

    def __call__(self, mechanism: Callable, d: Any, d_prime: Any, **claim: Any) -> Any:
        """Replay ``mechanism`` on (d, d_prime) against ``epsilon=``/``delta=`` or ``event=``; returns the result."""
        __tracebackhide__ = True
        return self.pairs(mechanism, [(d, d_prime)], **claim)

    def pairs(self, mechanism: Callable, pairs: Sequence[tuple[Any, Any]], **claim: Any) -> Any:
        """Replay over several pairs; the largest measured shift decides."""
        __tracebackhide__ = True
        from .replay import replay_pairs

        if "seed" in claim:
            pytest.fail("dp_replay: seed is set by the plugin (--dp-seed), not per call", pytrace=False)
        result = replay_pairs(mechanism, pairs, seed=_seed(self.seed, self.nodeid, len(self.results)), **claim)
        self.results.append(result)
        if result.violated:
            pytest.fail(f"differential privacy VIOLATED (record/replay): {result.summary()}", pytrace=False)
        return result


@pytest.fixture
def dp_replay(request: pytest.FixtureRequest) -> DPReplay:
    """Gray-box replay checks in a test: measured vs declared sensitivity, with a seed derived from the node id."""
    settings = request.config.stash.get(_SETTINGS_KEY, None)
    return DPReplay(request.node.nodeid, settings.seed if settings is not None else 0)
