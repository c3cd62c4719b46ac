"""End to end: train DP-SGD many times (and once), write score files, audit them, gate them.

    python examples/training/train_and_audit.py [--runs 5000] [--out DIR]

1. Many runs: DP-SGD on a small linear-regression dataset with and without a "Dirac" canary (white-box:
   each step's noisy gradient sum projected on the canary's gradient direction, summed over steps), once
   correct and once with a bug (per-example clipping forgotten). Each run's score goes to a CSV file with a
   0/1 column saying whether the canary was in that run, as a team's training job would write it.
2. One run: m canaries, each included with probability 1/2, one training run; the canary i's score is
   minus its coordinate of the final parameters (the model moves against each included canary's clipped
   gradient). Written to an .npz file (arrays ``score`` and ``included``).
3. Audit each file (dpaudit.audit_scores / dpaudit.audit_one_run), then write a gate TOML with
   ``[[score_audit]]`` entries and run ``dpaudit check`` on it: exit 1 because the leaky job exceeds its
   claimed epsilon.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit.cli import main as dpaudit_main
from dpaudit.mechanisms.dpsgd import DPSGD, DPSGDWithoutClipping, dirac_canary_data

SIGMA, STEPS, CLIP, DELTA = 5.0, 25, 1.0, 1e-5  # full batch: exactly sqrt(25)/5 = 1-GDP


def write_runs(path: Path, with_canary: np.ndarray, without: np.ndarray) -> None:
    scores = np.concatenate([with_canary, without])
    included = np.concatenate([np.ones(with_canary.size, int), np.zeros(without.size, int)])
    path.write_text("score,included\n" + "".join(f"{float(s)!r},{i}\n" for s, i in zip(scores, included)))


def many_runs(out: Path, runs: int, rng: np.random.Generator) -> dict[str, float]:
    data, data_with_canary, canary = dirac_canary_data(100, 5, seed=0)
    claims = {}
    for name, cls in (("correct", DPSGD), ("leaky", DPSGDWithoutClipping)):
        model = cls(SIGMA, 1.0, STEPS, CLIP, canary=canary, observe="dirac_sum", delta=DELTA)
        write_runs(out / f"{name}_runs.csv", model(data_with_canary, runs, rng), model(data, runs, rng))
        claims[name] = model.privacy.epsilon
    return claims


def one_run(out: Path, canaries: int, rng: np.random.Generator) -> float:
    base, _, _ = dirac_canary_data(100, 5, seed=1)
    d = 5 + canaries
    records = np.zeros((base.shape[0], d + 1))
    records[:, :4], records[:, -1] = base[:, :4], base[:, -1]
    included = rng.random(canaries) < 0.5
    canary_rows = np.zeros((canaries, d + 1))
    canary_rows[np.arange(canaries), 5 + np.arange(canaries)] = 1.0  # canary i: x = e_(5+i), y = -1000
    canary_rows[:, -1] = -1000.0
    data = np.vstack([records, canary_rows[included]])
    model = DPSGD(SIGMA, 1.0, STEPS, CLIP, observe="parameters", learning_rate=0.01, delta=DELTA)
    theta = model(data, 1, rng)[0]
    np.savez(out / "one_run.npz", score=-theta[5:], included=included.astype(int))
    return model.privacy.epsilon


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5000, help="training runs with and without the canary, each")
    parser.add_argument("--canaries", type=int, default=1000, help="canaries of the one-run audit")
    parser.add_argument("--out", default=str(Path(__file__).parent / "output"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)

    claims = many_runs(out, args.runs, rng)
    claim_one = one_run(out, args.canaries, rng)
    for name in ("correct", "leaky"):
        from dpaudit.auditor.score_files import read_score_file

        scores = read_score_file(out / f"{name}_runs.csv")
        result = dpaudit.audit_scores(scores.scores_with, scores.scores_without, epsilon=claims[name], delta=DELTA,
                                      confidence_level=0.95, seed=0)
        print(f"--- {name} ({args.runs} runs each way)\n{result.summary()}\n")
    loaded = np.load(out / "one_run.npz")
    result = dpaudit.audit_one_run(loaded["score"], loaded["included"], delta=DELTA, confidence_level=0.95,
                                   epsilon=claim_one)
    print(f"--- one run\n{result.summary()}\n")

    event = f"SelfComposed(PoissonSampled(1.0, Gaussian({SIGMA})), {STEPS})"
    toml = out / "training_gate.toml"
    toml.write_text(f"""# Written by examples/training/train_and_audit.py: gate a training job's score files.
[gate]
confidence_level = 0.95

[[score_audit]]
name = "dp-sgd (correct)"
scores = "correct_runs.csv"
event = "{event}"        # the claim: the PLD accountant's epsilon of this event at delta
delta = {DELTA}

[[score_audit]]
name = "dp-sgd (clipping forgotten)"
scores = "leaky_runs.csv"
event = "{event}"
delta = {DELTA}

[[score_audit]]
name = "dp-sgd one run"
scores = "one_run.npz"
one_run = true
event = "{event}"
delta = {DELTA}
""")
    code = dpaudit_main(["check", str(toml), "--report", str(out / "report")])
    print(f"dpaudit check exit code: {code} (1 = a training job exceeds its claimed epsilon)")
    return code


if __name__ == "__main__":
    sys.exit(0 if main() in (0, 1) else 1)
