"""A regression corpus of real DP-SGD bug classes, written as ordinary Opacus/PyTorch training code.

Every case is a picklable ``train(dataset, seed, hooks) -> model`` (the protocol of
:mod:`dpaudit.training.protocol`) with the loader it really trains on (``case.loader(dataset)``), the check
meant to catch it (``"sampler"``: :func:`~dpaudit.training.check_sampler` on that loader; ``"white_box"``:
a one-run Dirac-gradient audit against the claim) and where the claim comes from (the engine's history,
unless the case reports its own). Shared configuration: Poisson rate q = 0.1, 100 DP-SGD steps, noise
multiplier 3, clipping norm 1, a 32-64-2 MLP on synthetic data (claim: epsilon 1.39 at delta 1e-5).

Cases (the bug, and why the claim is wrong):

* ``correct``: ``make_private`` with Poisson sampling. Nothing should flag it.
* ``shuffled_batches`` / ``fixed_batches``: ``make_private(poisson_sampling=False)`` over a shuffled (resp.
  unshuffled) loader of fixed-size batches; the engine still accounts Poisson sampling at 1/len(loader)
  (Chua et al. 2024). Caught by the sampler check.
* ``clipping_off``: a DPOptimizer subclass sums the per-sample gradients without the clip factor (what
  happens when per-sample clipping is silently skipped); the noise still assumes norm C. Caught by the
  white-box audit with an over-norm canary (a correct stack clips it to C).
* ``noise_not_scaled_by_clipping_norm``: noise of standard deviation sigma instead of sigma * C (C = 10).
  Caught by the white-box audit.
* ``gradient_accumulation``: 10 Poisson micro-batches accumulated per optimizer step, the accountant stepped
  by a hand-written hook once per optimizer step at the micro-batch rate q (jax_privacy issue 234's class;
  Opacus' own hook would multiply the rate by 10). Caught by the white-box audit.
* ``noise_multiplier_mismatch``: the engine is told sigma = 3 (its history and the reported epsilon say
  so) but the optimizer adds noise with sigma = 0.3 from another calibration. Caught by the white-box audit.
* ``actual_batch_size``: a DPOptimizer subclass averages the noisy sum over the batch actually drawn instead
  of the expected batch size q n (Opacus issue 819's class): every update reveals the realised batch size,
  which the accountant never charged for. The Dirac score does not see it (the canary's share of the update
  stays near C); the update-scale check (:mod:`dpaudit.training.update_scale`) does, from the same run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CASES", "CorpusCase", "CorpusVerdict", "check_case", "synthetic_dataset", "make_model", "make_optimizer", "SAMPLE_RATE", "STEPS",
           "NOISE_MULTIPLIER", "MAX_GRAD_NORM", "FEATURES"]

SAMPLE_RATE = 0.1
STEPS = 100
NOISE_MULTIPLIER = 3.0
MAX_GRAD_NORM = 1.0
FEATURES = 32
_BATCHES = round(1 / SAMPLE_RATE)  # Opacus' sample rate is 1 / len(loader)
_EPOCHS = STEPS // _BATCHES


def synthetic_dataset(records: int = 1000, seed: int = 0) -> Any:
    """A two-class synthetic dataset (``FEATURES`` Gaussian features, labels from a random hyperplane)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(records, FEATURES, generator=generator)
    w = torch.randn(FEATURES, generator=generator)
    return torch.utils.data.TensorDataset(x, (x @ w > 0).long())


def make_model() -> Any:
    """A 32-64-2 MLP (2,242 parameters)."""
    import torch

    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))


def make_optimizer(model: Any) -> Any:
    """Plain SGD."""
    import torch

    return torch.optim.SGD(model.parameters(), lr=0.05)


def _batched_loader(dataset: Any, shuffle: bool, batches: int = _BATCHES) -> Any:
    import torch

    size = -(-len(dataset) // batches)
    return torch.utils.data.DataLoader(dataset, batch_size=size, shuffle=shuffle)


def _poisson_loader(dataset: Any, batches: int = _BATCHES) -> Any:
    from opacus.data_loader import DPDataLoader

    return DPDataLoader.from_data_loader(_batched_loader(dataset, shuffle=False, batches=batches))


def _train_loop(model: Any, optimizer: Any, loader: Any, epochs: int, accumulate: int = 1) -> Any:
    import torch

    model.train()
    seen = 0
    for _ in range(epochs):
        for inputs, labels in loader:
            torch.nn.functional.cross_entropy(model(inputs), labels).backward()
            seen += 1
            if seen % accumulate == 0:
                optimizer.step()
                optimizer.zero_grad()
    return model


def _manual_stack(dataset: Any, seed: int, optimizer_class: Any, noise_multiplier: float,
                  max_grad_norm: float, sample_rate: float, hand_written_hook: bool = False) -> tuple[Any, Any, Any]:
    """The stack make_private builds, written out by hand (how custom DP optimizers are plugged in).
    ``hand_written_hook``: the accountant is stepped by the user's own hook, one step at ``sample_rate`` per
    optimizer step (Opacus' own hook multiplies the rate by the accumulated micro-batches; this one does not)."""
    import torch
    from opacus import GradSampleModule, PrivacyEngine

    torch.manual_seed(seed)
    engine = PrivacyEngine(accountant="prv")
    model = GradSampleModule(make_model())
    optimizer = optimizer_class(make_optimizer(model), noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm,
                                expected_batch_size=max(1, round(sample_rate * len(dataset))))
    if hand_written_hook:
        def account(optim: Any) -> None:
            engine.accountant.step(noise_multiplier=optim.noise_multiplier, sample_rate=sample_rate)

        optimizer.attach_step_hook(account)
    else:
        optimizer.attach_step_hook(engine.accountant.get_optimizer_hook_fn(sample_rate=sample_rate))
    return model, optimizer, engine


def _dp_optimizer_classes() -> dict[str, Any]:
    from opacus.optimizers import DPOptimizer

    class DPOptimizerWithoutClipping(DPOptimizer):
        """Sums per-sample gradients without the clip factor."""

        def clip_and_accumulate(self) -> None:
            for p in self.params:
                grad = self._get_flat_grad_sample(p).sum(dim=0)
                p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad

    class DPOptimizerNoiseWithoutClippingNorm(DPOptimizer):
        """Noise of standard deviation noise_multiplier, not noise_multiplier * max_grad_norm."""

        def add_noise(self) -> None:
            import torch

            for p in self.params:
                p.grad = (p.summed_grad + torch.normal(0.0, self.noise_multiplier, p.summed_grad.shape)).view_as(p)

    class DPOptimizerOtherCalibration(DPOptimizer):
        """Adds noise with a noise multiplier from another calibration than the one the accountant is told."""

        calibrated_noise_multiplier = NOISE_MULTIPLIER / 10

        def add_noise(self) -> None:
            told = self.noise_multiplier
            self.noise_multiplier = self.calibrated_noise_multiplier
            try:
                super().add_noise()
            finally:
                self.noise_multiplier = told

    class DPOptimizerActualBatchSize(DPOptimizer):
        """Averages the noisy sum over the batch actually drawn, not the expected batch size."""

        def scale_grad(self) -> None:
            if self.loss_reduction == "mean":
                drawn = max(1, int(self.grad_samples[0].shape[0]))
                for p in self.params:
                    p.grad /= drawn

    return {"without_clipping": DPOptimizerWithoutClipping, "noise_without_norm": DPOptimizerNoiseWithoutClippingNorm,
            "other_calibration": DPOptimizerOtherCalibration, "actual_batch_size": DPOptimizerActualBatchSize,
            "dp": DPOptimizer}


@dataclass(frozen=True)
class CorpusCase:
    """One training stack of the corpus (see the module docstring)."""

    name: str
    check: str  # "none" (the correct stack), "sampler", "white_box" or "update_scale"
    description: str

    def loader(self, dataset: Any) -> Any:
        """The data loader the case really trains on."""
        if self.name in ("shuffled_batches", "fixed_batches"):
            return _batched_loader(dataset, shuffle=self.name == "shuffled_batches")
        return _poisson_loader(dataset)

    def __call__(self, dataset: Any, seed: int, hooks: Any) -> Any:
        import torch
        from opacus import PrivacyEngine

        if self.name in ("correct", "shuffled_batches", "fixed_batches"):
            torch.manual_seed(seed)
            engine = PrivacyEngine(accountant="prv")
            model = make_model()
            model, optimizer, loader = engine.make_private(
                module=model, optimizer=make_optimizer(model),
                data_loader=_batched_loader(dataset, shuffle=self.name == "shuffled_batches"),
                noise_multiplier=NOISE_MULTIPLIER, max_grad_norm=MAX_GRAD_NORM, poisson_sampling=self.name == "correct")
            hooks.attach(model, optimizer, engine)
            return _train_loop(model, optimizer, loader, _EPOCHS)
        classes = _dp_optimizer_classes()
        if self.name == "gradient_accumulation":
            accumulate = 10
            model, optimizer, engine = _manual_stack(dataset, seed, classes["dp"], NOISE_MULTIPLIER, MAX_GRAD_NORM,
                                                     SAMPLE_RATE, hand_written_hook=True)
            hooks.attach(model, optimizer, engine)
            return _train_loop(model, optimizer, _poisson_loader(dataset), _EPOCHS, accumulate=accumulate)
        kind, norm = {"clipping_off": ("without_clipping", MAX_GRAD_NORM),
                      "noise_not_scaled_by_clipping_norm": ("noise_without_norm", 10 * MAX_GRAD_NORM),
                      "noise_multiplier_mismatch": ("other_calibration", MAX_GRAD_NORM),
                      "actual_batch_size": ("actual_batch_size", MAX_GRAD_NORM)}[self.name]
        model, optimizer, engine = _manual_stack(dataset, seed, classes[kind], NOISE_MULTIPLIER, norm, SAMPLE_RATE)
        hooks.attach(model, optimizer, engine)
        return _train_loop(model, optimizer, _poisson_loader(dataset), _EPOCHS)


CASES: dict[str, CorpusCase] = {case.name: case for case in (
    CorpusCase("correct", "none", "make_private with Poisson sampling (the reference)"),
    CorpusCase("shuffled_batches", "sampler", "shuffled fixed-size batches accounted as Poisson"),
    CorpusCase("fixed_batches", "sampler", "unshuffled fixed-size batches accounted as Poisson"),
    CorpusCase("clipping_off", "white_box", "per-sample gradients summed without clipping"),
    CorpusCase("noise_not_scaled_by_clipping_norm", "white_box", "noise std sigma instead of sigma * C (C = 10)"),
    CorpusCase("gradient_accumulation", "white_box", "10 micro-batches per step, accounted as one step at rate q"),
    CorpusCase("noise_multiplier_mismatch", "white_box", "noise from another calibration (sigma 0.3) than the "
                                                         "accountant's (sigma 3)"),
    CorpusCase("actual_batch_size", "update_scale", "noisy sum averaged over the realised batch size, not the "
                                                    "expected q n"),
)}


@dataclass(frozen=True)
class CorpusVerdict:
    """The three checks on one case and seed: the sampler check, the white-box one-run audit and the
    update-scale check on that audit's observed updates."""

    case: str
    seed: int
    sampler: Any  # SamplerCheckResult
    white_box: Any  # TrainingAuditResult

    @property
    def update_scale(self) -> Any:
        """The update-scale check of the white-box run (an UpdateScaleCheck)."""
        return self.white_box.update_scale

    @property
    def flagged(self) -> bool:
        """Whether the check meant for the case flagged it (for ``correct``: whether any of the three did)."""
        case = CASES[self.case]
        verdicts = {"sampler": self.sampler.violated, "white_box": self.white_box.violated,
                    "update_scale": self.update_scale.violated}
        return verdicts[case.check] if case.check in verdicts else any(verdicts.values())


def check_case(name: str, seed: int, canaries: int = 1000, records: int = 1000, confidence_level: float = 0.95,
               false_alarm_rate: float = 0.05, update_false_alarm_rate: float = 0.001) -> CorpusVerdict:
    """Run the sampler check on the case's loader (false-alarm rate ``false_alarm_rate``) and a one-run
    white-box audit (``canaries`` Dirac canaries of norm 10 C, so a stack that does not clip is seen) of its
    training, with the update-scale check on the same run (false-alarm rate ``update_false_alarm_rate``; the
    audit certifies at confidence ``max(confidence_level, 1 - update_false_alarm_rate)``, the audit's even
    split); ``seed`` seeds all three. The witnessed run of :mod:`dpaudit.training.witness_corpus` is not part
    of this verdict."""
    from .audit import audit_training
    from .canaries import make_canaries
    from .protocol import TrainingTarget
    from .sampler import check_sampler

    case = CASES[name]
    dataset = synthetic_dataset(records, seed)
    sampler = check_sampler(case.loader(dataset), SAMPLE_RATE, seed=seed, false_alarm_rate=false_alarm_rate)
    x, y = dataset.tensors
    planted = make_canaries("dirac_gradient", canaries, x.numpy(), y.numpy(), 2, seed, gradient_norm_factor=10.0)
    audit = audit_training(TrainingTarget(case, dataset, planted), delta=1e-5, confidence_level=confidence_level,
                           seed=seed, check_seed=False, false_alarm_rate=2 * update_false_alarm_rate, witness=False)
    return CorpusVerdict(name, seed, sampler, audit)
