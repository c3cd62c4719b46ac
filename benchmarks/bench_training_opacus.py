"""Opacus end to end: white-box tightness, the bug corpus, the sampler check, one-run audits, hook overhead
and accountant agreement; writes reports/training_opacus.md (+ .json).

Sections (each can be run alone with --only NAME; results are merged into the JSON and the report is
re-rendered from it):

* ``accountant``: dpaudit's epsilon from an Opacus engine's history against Opacus' PRV (and RDP) accountant;
* ``sampler``: the sampler check on a shuffled loader and on Opacus' Poisson loader, 20 seeds each;
* ``corpus``: every bug of dpaudit.training.corpus over 5 seeds, the correct training over 20, each judged
  by the check meant for it (q = 0.1, 100 steps): the sampler check, the white-box audit or the update-scale
  check (false-alarm rate 0.001) on the white-box run;
* ``one_run``: one Opacus run with 1,000 Dirac gradient canaries: epsilon_lower beside the claim and the
  perfect-guess bound;
* ``overhead``: wall time of the same Opacus training with and without the hooks;
* ``mu``: many-run white-box Dirac audit of full-batch Opacus training (T = 25, sigma = 5, so mu = 1):
  mu_lower / mu.

Run: nice python benchmarks/bench_training_opacus.py [--only SECTION] [--runs R] [--workers W] [--render]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import machine_line

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from dpaudit._io import atomic_write_text  # noqa: E402
from dpaudit.training import OpacusTraining, audit_opacus, check_sampler, claim_from_opacus  # noqa: E402
from dpaudit.training import corpus, perfect_guess_epsilon  # noqa: E402
from dpaudit.training.canaries import make_canaries  # noqa: E402
from dpaudit.training.protocol import TrainingTarget  # noqa: E402

JSON = ROOT / "reports" / "training_opacus.json"
REPORT = ROOT / "reports" / "training_opacus.md"
DELTA = 1e-5


# ------------------------------------------------------------------------------------------ factories
def mu_dataset() -> torch.utils.data.TensorDataset:
    generator = torch.Generator().manual_seed(0)
    return torch.utils.data.TensorDataset(torch.randn(8, 4, generator=generator),
                                          torch.randint(0, 2, (8,), generator=generator))


def mu_model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def sgd(model: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.1)


def full_batch(dataset) -> torch.utils.data.DataLoader:
    return torch.utils.data.DataLoader(dataset, batch_size=len(dataset))


def corpus_loader(dataset) -> torch.utils.data.DataLoader:
    return torch.utils.data.DataLoader(dataset, batch_size=-(-len(dataset) // 10))


class NoHooks:
    """Attaches nothing (the baseline of the overhead measurement)."""

    privacy_engine = None

    def attach(self, model, optimizer, privacy_engine=None) -> None:
        self.privacy_engine = privacy_engine


# ------------------------------------------------------------------------------------------ sections
def accountant_section() -> dict:
    from opacus.accountants import PRVAccountant, RDPAccountant

    rows = []
    for sigma, q, steps in [(3.0, 0.1, 100), (1.0, 0.1, 100), (1.0, 0.01, 1000), (5.0, 1.0, 25), (0.8, 0.004, 10000)]:
        row = {"noise_multiplier": sigma, "sample_rate": q, "steps": steps}
        for name, kind in (("prv", PRVAccountant), ("rdp", RDPAccountant)):
            acct = kind()
            acct.history = [(sigma, q, steps)]
            claim = claim_from_opacus(acct, DELTA)
            row["dpaudit"] = claim.epsilon_upper
            row["dpaudit_method"] = claim.epsilon_upper_method
            row[name] = claim.epsilon_opacus
        row["ratio_prv"] = row["dpaudit"] / row["prv"] if row["prv"] else None
        rows.append(row)
    return {"rows": rows, "delta": DELTA}


def sampler_section(seeds: int = 20) -> dict:
    from opacus.data_loader import DPDataLoader

    dataset = corpus.synthetic_dataset(1000, 0)
    shuffled = torch.utils.data.DataLoader(dataset, batch_size=100, shuffle=True)
    poisson = DPDataLoader.from_data_loader(shuffled)
    out = {}
    for name, loader in (("shuffled", shuffled), ("poisson", poisson)):
        started = time.perf_counter()
        results = [check_sampler(loader, 0.1, seed=s) for s in range(seeds)]
        out[name] = {"flagged": sum(r.violated for r in results), "seeds": seeds,
                     "seconds_per_check": (time.perf_counter() - started) / seeds,
                     "median_p": float(np.median([r.p_value for r in results]))}
    out["false_alarm_rate"] = 0.05
    return out


def corpus_section(bug_seeds: int = 5, correct_seeds: int = 20) -> dict:
    out = {}
    for name, case in corpus.CASES.items():
        seeds = correct_seeds if case.check == "none" else bug_seeds
        started = time.perf_counter()
        verdicts = [corpus.check_case(name, seed) for seed in range(seeds)]
        out[name] = {
            "check": case.check, "description": case.description, "seeds": seeds,
            "flagged": sum(v.flagged for v in verdicts),
            "sampler_flagged": sum(v.sampler.violated for v in verdicts),
            "white_box_flagged": sum(v.white_box.violated for v in verdicts),
            "update_scale_flagged": sum(v.update_scale.violated for v in verdicts),
            "update_scale_median_p": float(np.median([v.update_scale.p_value for v in verdicts])),
            "epsilon_lower_median": float(np.median([v.white_box.epsilon_lower for v in verdicts])),
            "epsilon_upper": verdicts[0].white_box.epsilon_upper, "epsilon_opacus": verdicts[0].white_box.epsilon_opacus,
            "confidence_level": verdicts[0].white_box.confidence_level,
            "seconds_per_seed": (time.perf_counter() - started) / seeds}
        print(name, out[name], flush=True)
    return out


def one_run_section(canaries: int = 1000, sigmas: tuple[float, ...] = (1.0, 0.5, 0.3)) -> dict:
    dataset = corpus.synthetic_dataset(1000, 0)
    perfect = perfect_guess_epsilon(canaries, DELTA, 0.95)
    rows = []
    for sigma in sigmas:
        train = OpacusTraining(corpus.make_model, corpus.make_optimizer, corpus_loader, noise_multiplier=sigma,
                               max_grad_norm=1.0, epochs=100 // 10)
        started = time.perf_counter()
        result = audit_opacus(train, dataset=dataset, canaries=canaries, seed=0, check_seed=False)
        rows.append({"noise_multiplier": sigma, "epsilon_lower": result.epsilon_lower,
                     "epsilon_upper": result.epsilon_upper, "epsilon_opacus": result.epsilon_opacus,
                     "ratio_to_claim": result.epsilon_lower / result.epsilon_upper,
                     "ratio_to_perfect": result.epsilon_lower / perfect, "guesses": result.audit["guesses"],
                     "correct": result.audit["correct"], "seconds": time.perf_counter() - started})
    return {"canaries": canaries, "sample_rate": 0.1, "steps": 100, "perfect_guess": perfect, "rows": rows}


def overhead_section(repeats: int = 5, canaries: int = 1000) -> dict:
    from dpaudit.training.opacus_hooks import OpacusHooks

    dataset = corpus.synthetic_dataset(1000, 0)
    x, y = dataset.tensors
    planted = make_canaries("dirac_gradient", canaries, x.numpy(), y.numpy(), 2, 0)
    mask = np.arange(canaries) % 2 == 0
    with_canaries = TrainingTarget(corpus.CASES["correct"], dataset, planted).add_canaries(
        dataset, planted.inputs[mask], planted.labels[mask])
    times = {"hooks": [], "none": []}
    for r in range(repeats):
        for kind in ("none", "hooks"):
            hooks = OpacusHooks(planted) if kind == "hooks" else NoHooks()
            started = time.perf_counter()
            corpus.CASES["correct"](with_canaries, r, hooks)
            times[kind].append(time.perf_counter() - started)
    best = {k: min(v) for k, v in times.items()}
    return {"repeats": repeats, "canaries": canaries, "steps": 100, "seconds_with_hooks": best["hooks"],
            "seconds_without": best["none"], "ratio": best["hooks"] / best["none"]}


def mu_section(runs: int, workers: int, batch: int = 2000) -> dict:
    """Runs drawn in batches of ``batch`` and saved as they come (``reports/training_opacus_mu_scores.npy``),
    so an interrupted benchmark resumes; then one audit_scores over all of them."""
    from dpaudit import audit_scores
    from dpaudit.training.protocol import draw_runs

    sigma, steps = 5.0, 25
    mu = math.sqrt(steps) / sigma
    data = mu_dataset()
    x, y = data.tensors
    train = OpacusTraining(mu_model, sgd, full_batch, noise_multiplier=sigma, max_grad_norm=1.0, epochs=steps)
    target = TrainingTarget(train, data, make_canaries("dirac_gradient", 1, x.numpy(), y.numpy(), 2, 0))
    store = ROOT / "reports" / "training_opacus_mu_scores.npy"
    clock = store.with_suffix(".json")  # the training seconds of the stored runs (kept across resumed invocations)
    scores = list(np.load(store)) if store.exists() else []
    trained = (json.loads(clock.read_text()) if clock.exists() and scores else
               {"runs": 0, "seconds": 0.0, "load_start": os.getloadavg()[0]})
    profile = profile_runs(target)
    accountant = None
    while len(scores) < runs:
        drawn = time.perf_counter()
        outcomes = draw_runs(target, 0, min(batch, runs - len(scores)), workers=workers, first=len(scores))
        accountant = accountant or outcomes[0].accountant
        scores += [float(o.scores[0]) for o in outcomes]
        np.save(store, np.array(scores))
        trained = {"runs": len(scores), "seconds": trained["seconds"] + time.perf_counter() - drawn,
                   "load_start": trained["load_start"], "load_end": os.getloadavg()[0]}
        atomic_write_text(clock, json.dumps(trained))
        print(f"mu: {len(scores)} runs", flush=True)
    audited = time.perf_counter()
    if accountant is None:
        accountant = draw_runs(target, 0, 1).pop().accountant
    values = np.array(scores[:runs])
    claim = claim_from_opacus(accountant, DELTA)
    # every run is already trained: certify on all of them (a sequential audit would stop early for futility)
    result = audit_scores(values[0::2], values[1::2], epsilon=claim.epsilon_upper, delta=DELTA, confidence_level=0.95,
                          seed=0, mu=mu, sequential=False)
    prefixes = {}
    for size in sorted({4000, 8000, 12000, int(values.size)}):
        if size <= values.size:
            part = values[:size]
            prefixes[str(size)] = audit_scores(part[0::2], part[1::2], epsilon=claim.epsilon_upper, delta=DELTA,
                                               confidence_level=0.95, seed=0, mu=mu, sequential=False).mu_lower
    return {"runs": int(values.size), "workers": workers, "noise_multiplier": sigma, "steps": steps, "mu": mu,
            "seconds_training": trained["seconds"], "profile": profile, "prefix_mu_lower": prefixes,
            "load_average": [trained["load_start"], trained.get("load_end", os.getloadavg()[0])],
            "mu_lower": result.mu_lower, "ratio": result.mu_lower / mu, "epsilon_lower": result.epsilon_lower,
            "epsilon_upper": claim.epsilon_upper, "epsilon_opacus": claim.epsilon_opacus,
            "seconds": trained["seconds"] + time.perf_counter() - audited + profile["seconds"], "auroc": result.auroc,
            "shift_estimate": float((values[0::2].mean() - values[1::2].mean()) / values[1::2].std()),
            "mean_with": float(values[0::2].mean()), "std_with": float(values[0::2].std()),
            "mean_without": float(values[1::2].mean()), "std_without": float(values[1::2].std()),
            "gaussian_reference": gaussian_reference(sorted({values.size // 2, 8000, 12000}), mu)}


def profile_runs(target: TrainingTarget, runs: int = 100) -> dict:
    """Where a run's time goes, in this process (one torch thread): cProfile over ``runs`` runs, the share of
    the cumulative time in the training loop's parts."""
    import cProfile
    import pstats

    from dpaudit.training.protocol import run_one

    run_one(target, np.array([True]), 0, 0)  # warm up
    started = time.perf_counter()
    for index in range(runs):
        run_one(target, np.array([index % 2 == 0]), index, index)
    plain = (time.perf_counter() - started) / runs
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for index in range(runs):
        run_one(target, np.array([index % 2 == 0]), index, index)
    profiler.disable()
    elapsed = time.perf_counter() - started
    stats = pstats.Stats(profiler).stats
    parts = {"backward (Opacus per-sample gradients)": "backward", "optimizer step (clip, noise, hooks)": "step",
             "forward": "forward", "make_private": "make_private", "hooks: plant canaries": "_plant",
             "hooks: observe updates": "_observe", "data loader": "__next__"}
    shares = {}
    for label, name in parts.items():
        cumulative = max((v[3] for k, v in stats.items() if k[2] == name), default=0.0)
        shares[label] = cumulative / elapsed
    return {"runs": runs, "seconds": elapsed + plain * runs, "seconds_per_run": plain,
            "seconds_per_run_profiled": elapsed / runs, "shares": shares}


def gaussian_reference(sizes: list[int], mu: float, seeds: int = 4) -> dict[str, list[float]]:
    """mu_lower that audit_scores certifies on exactly Gaussian scores (shift mu) with n per side, per seed."""
    from dpaudit import audit_scores

    out = {}
    for n in sizes:
        bounds = []
        for seed in range(seeds):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(n,)))
            bounds.append(audit_scores(rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n), delta=DELTA, seed=seed).mu_lower)
        out[str(n)] = bounds
    return out


# ------------------------------------------------------------------------------------------ report
def _mu_time(m: dict) -> str:
    if "seconds_training" not in m:
        return ""
    load = m.get("load_average", [None, None])
    estimate = m["runs"] * m["profile"]["seconds_per_run"] / m["workers"] / 60 if "profile" in m else None
    return (f" Benchmark time {m['seconds'] / 60:.1f} min in all ({m['seconds_training'] / 60:.1f} min training the runs); "
            f"the 2 cores were shared with other jobs (1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} at "
            "the end, against 2 cores), so the time is pessimistic"
            + (f"; at the profiled rate below, {m['workers']} workers with a core each would train the runs in about "
               f"{estimate:.0f} min (an estimate, not a measurement)." if estimate is not None else "."))


def _corpus_confidence(corpus_rows: dict) -> str:
    """The confidence the corpus section's white-box audits certified at (the audit's own, recorded per case)."""
    levels = sorted({row["confidence_level"] for row in corpus_rows.values() if "confidence_level" in row})
    return ", ".join(f"{level:g}" for level in levels) if levels else "not recorded"


def render(data: dict) -> str:
    lines = ["# Opacus end to end", "", f"Generated by `benchmarks/bench_training_opacus.py` ({data.get('machine', '')}; "
             f"torch {data.get('torch', '')}, opacus {data.get('opacus', '')}). Every number is measured by the "
             "benchmark. Lower bounds are certified at delta 1e-5 and confidence 0.95 (the bug corpus's white-box audits at "
             "the confidence stated in its section).", ""]
    if data.get("section_runs"):
        lines += ["Sections may come from separate invocations of the benchmark; when each was run: " + ", ".join(
            f"{name} {when}" for name, when in data["section_runs"].items()) + ".", ""]
    if "mu" in data:
        m = data["mu"]
        lines += ["## White-box Dirac canary, full batch (tightness)", "",
                  f"Opacus training of a small MLP (4-4-2) on 8 synthetic records, full batch, T = {m['steps']}, sigma = "
                  f"{m['noise_multiplier']:g} (mu = {m['mu']:g}); {m['runs']} runs (half with the canary), "
                  f"{m['workers']} worker processes, one torch thread each (runs drawn in resumable batches of 2,000, "
                  "sent to the pool in chunks; each run's seed spawned from the audit's seed)." + _mu_time(m), "",
                  "| mu | mu_lower | mu_lower / mu | epsilon_lower | epsilon claimed (dpaudit) | Opacus |",
                  "|---|---|---|---|---|---|",
                  f"| {m['mu']:g} | {m['mu_lower']:.4f} | **{m['ratio']:.3f}** | {m['epsilon_lower']:.4f} | "
                  f"{m['epsilon_upper']:.4f} | {m['epsilon_opacus']:.4f} |", "",
                  f"The scores are the Gaussian mechanism the claim describes: with the canary mean {m['mean_with']:.2f}, "
                  f"sd {m['std_with']:.2f}; without it mean {m['mean_without']:.2f}, sd {m['std_without']:.2f} (theory: "
                  f"{m['steps']} and {m['noise_multiplier'] * math.sqrt(m['steps']):g}); estimated shift "
                  f"{m['shift_estimate']:.3f} sd (an estimate, not a bound). The certified mu_lower is limited by the "
                  "number of runs; what audit_scores certifies on exactly Gaussian scores with the same mu (4 seeds):", "",
                  "| runs per side | mu_lower (4 seeds) |", "|---|---|",
                  *[f"| {n} | {', '.join(f'{b:.3f}' for b in bounds)} |" for n, bounds in m["gaussian_reference"].items()],
                  ""]
        if "prefix_mu_lower" in m:
            lines += ["How many runs are needed: the same audit on the first R runs of this benchmark (R/2 per side):", "",
                      "| runs R | mu_lower | mu_lower / mu |", "|---|---|---|",
                      *[f"| {r} | {b:.4f} | {b / m['mu']:.3f} |" for r, b in m["prefix_mu_lower"].items()], ""]
        if "profile" in m:
            p = m["profile"]
            lines += [f"Where a run's time goes (cProfile over {p['runs']} runs in one process, one torch thread; "
                      f"{p['seconds_per_run'] * 1000:.1f} ms per run unprofiled, {p['seconds_per_run_profiled'] * 1000:.1f} ms "
                      "profiled; shares of the profiled time, nested parts overlap):", "",
                      "| part | share |", "|---|---|",
                      *[f"| {name} | {share:.0%} |" for name, share in p["shares"].items()], ""]
    if "corpus" in data:
        lines += ["## Bug corpus (q = 0.1, 100 steps, sigma = 3, C = 1)", "",
                  "Each case is judged by the check meant for it: the sampler check on its loader (false-alarm rate "
                  "0.05), a one-run white-box audit with 1,000 Dirac canaries (norm 10 C) against the engine's claim "
                  f"(confidence {_corpus_confidence(data['corpus'])}), or the update-scale check on that audit's observed "
                  "updates (false-alarm rate 0.001: the pure noise on the coordinates of the canaries outside each batch, tested for dependence "
                  "on the realised batch size and for the declared level sigma C). The correct training counts as "
                  "flagged if any of the three flags it.", "",
                  "| case | check | flagged | sampler flagged | white-box flagged | update-scale flagged | median epsilon_lower | claim | Opacus | s/seed |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for name, row in data["corpus"].items():
            lines.append(f"| {name} | {row['check']} | **{row['flagged']}/{row['seeds']}** | {row['sampler_flagged']} | "
                         f"{row['white_box_flagged']} | {row.get('update_scale_flagged', 'n/a')} | "
                         f"{row['epsilon_lower_median']:.3f} | {row['epsilon_upper']:.3f} | "
                         f"{row['epsilon_opacus']:.3f} | {row['seconds_per_seed']:.1f} |")
        lines += [""]
    if "sampler" in data:
        s = data["sampler"]
        lines += ["## Sampler check (1,000 records, q = 0.1, 2 epochs, false-alarm rate 0.05)", "",
                  "| loader | flagged | median p | seconds per check |", "|---|---|---|---|"]
        for name in ("shuffled", "poisson"):
            lines.append(f"| {name} | {s[name]['flagged']}/{s[name]['seeds']} | {s[name]['median_p']:.3g} | "
                         f"{s[name]['seconds_per_check']:.3f} |")
        lines += [""]
    if "one_run" in data:
        o = data["one_run"]
        lines += [f"## One run, {o['canaries']:,} Dirac gradient canaries", "",
                  f"The corpus MLP on 1,000 synthetic records plus the canaries (each in with probability 1/2), q = "
                  f"{o['sample_rate']:g}, T = {o['steps']}. Perfect-guess bound for {o['canaries']:,} canaries: "
                  f"{o['perfect_guess']:.4f} (the largest one-run bound any attack can certify: every canary guessed, every "
                  "guess right; Steinke, Nasr & Jagielski 2023).", "",
                  "| sigma | epsilon_lower | claimed (dpaudit) | Opacus | lower / claimed | lower / perfect-guess | guesses right | s |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in o["rows"]:
            lines.append(f"| {r['noise_multiplier']:g} | {r['epsilon_lower']:.4f} | {r['epsilon_upper']:.4f} | "
                         f"{r['epsilon_opacus']:.4f} | {r['ratio_to_claim']:.3f} | **{r['ratio_to_perfect']:.3f}** | "
                         f"{r['correct']}/{r['guesses']} | {r['seconds']:.0f} |")
        lines += ["", "When the claim exceeds the perfect-guess bound, one run cannot certify it whatever the attack: "
                  "the ratio to the perfect-guess figure says how close the audit came to what 1,000 canaries allow.", ""]
    if "overhead" in data:
        h = data["overhead"]
        lines += ["## Hook overhead", "",
                  f"The correct corpus training (100 steps) with {h['canaries']} planted Dirac canaries, best of "
                  f"{h['repeats']}: with hooks {h['seconds_with_hooks']:.3f} s, without {h['seconds_without']:.3f} s, "
                  f"ratio **{h['ratio']:.3f}**.", ""]
    if "accountant" in data:
        lines += ["## Accountant agreement (epsilon at delta 1e-5 from the engine's history)", "",
                  "| sigma | q | steps | dpaudit (method) | Opacus PRV | Opacus RDP | dpaudit / PRV |", "|---|---|---|---|---|---|---|"]
        for row in data["accountant"]["rows"]:
            lines.append(f"| {row['noise_multiplier']:g} | {row['sample_rate']:g} | {row['steps']} | {row['dpaudit']:.4f} "
                         f"({row['dpaudit_method']}) | {row['prv']:.4f} | {row['rdp']:.4f} | {row['ratio_prv']:.4f} |")
        lines += ["", "dpaudit's number is an upper bound (rounded up); below 1 means tighter than Opacus' PRV.", ""]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["accountant", "sampler", "corpus", "one_run", "overhead", "mu"], action="append")
    parser.add_argument("--runs", type=int, default=16000, help="runs of the mu section")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--render", action="store_true", help="only re-render the report from the JSON")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    if not args.render:
        import opacus

        sections = args.only or ["accountant", "sampler", "one_run", "overhead", "corpus", "mu"]
        for name in sections:
            started = time.perf_counter()
            result = mu_section(args.runs, args.workers) if name == "mu" else globals()[f"{name}_section"]()
            print(f"{name}: {time.perf_counter() - started:.0f} s", flush=True)
            data = _load()  # re-read: sections may be run by separate invocations
            data[name] = result
            data.setdefault("section_runs", {})[name] = datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M UTC")
            data.update(machine=machine_line(), torch=torch.__version__, opacus=opacus.__version__,
                        date=datetime.date.today().isoformat())
            atomic_write_text(JSON, json.dumps(data, indent=2, allow_nan=False))
    atomic_write_text(REPORT, render(_load()))


def _load() -> dict:
    return json.loads(JSON.read_text()) if JSON.exists() else {}


if __name__ == "__main__":
    main()
