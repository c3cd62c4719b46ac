"""A read-only description of the gate's TOML keys, next to the parser (``config.py``), for the generated
configuration reference of the documentation.

The parser stays the authority on what is accepted. :func:`check_against_parser` asks the parser itself
which keys each section accepts (through its "unknown key (allowed: ...)" errors) and which top-level
sections exist, and lists every difference from this description: the documentation build and the test
suite fail on any, so the reference cannot drift from the parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

__all__ = ["Key", "Section", "SECTIONS", "check_against_parser", "reference_markdown"]


@dataclass(frozen=True)
class Key:
    name: str
    type: str
    required: str  # "yes", "no", or the condition under which it is required
    default: str
    description: str


@dataclass(frozen=True)
class Section:
    name: str
    array: bool  # [[name]] (an array of tables) or [name]
    description: str
    keys: tuple[Key, ...]
    variants: tuple[tuple[str, tuple[Key, ...]], ...] = ()  # kind -> extra keys (budgets)

    @property
    def header(self) -> str:
        return f"[[{self.name}]]" if self.array else f"[{self.name}]"


def _gate_default(name: str) -> str:
    from .config import GateSettings

    value = {f.name: f.default for f in fields(GateSettings)}[name]
    return "none" if value is None else (f"{value:_}" if isinstance(value, int) and value >= 10_000 else repr(value))


_TIMEOUT = Key("timeout", "float (seconds)", "no", "[gate] timeout", "time limit of this entry; a hung mechanism is stopped and "
               "the entry is reported as ERROR (exit code 3 unless something else was found)")
_MECHANISM = Key("mechanism", "string `module:callable`", "one of mechanism/example",
                 "-", "a mechanism `mechanism(data, size, rng)`, imported from the config's directory or the Python path")
_EXAMPLE = Key("example", "string", "one of mechanism/example", "-",
               "the name of one of `dpaudit.mechanisms.examples()` (its claim, data and neighbours are the defaults)")
_CONFIDENCE = Key("confidence_level", "float in (0, 1)", "no", "[gate] confidence_level",
                  "confidence of this check (ignored when [gate] false_alarm_rate is set: the gate then splits that rate)")


def _sections() -> tuple[Section, ...]:
    gate = Section("gate", False, "Settings of the whole gate (optional).", (
        Key("seed", "integer >= 0", "no", _gate_default("seed"), "base seed; each entry's seed is derived from it and the entry's name"),
        Key("false_alarm_rate", "float in (0, 1)", "no", _gate_default("false_alarm_rate"),
            "bound on the probability that an unchanged correct configuration fails, split evenly over every audit and "
            "accuracy check (union bound); unset, each entry keeps its own confidence_level"),
        Key("samples", "integer in [200, 1e11]", "no", _gate_default("samples"), "default samples per input of each audit"),
        Key("accuracy_samples", "integer in [1, 1e11]", "no", _gate_default("accuracy_samples"), "default samples of each accuracy check"),
        Key("confidence_level", "float in (0, 1)", "no", _gate_default("confidence_level"), "default confidence of each check"),
        Key("workers", "integer >= 1", "no", "all cores", "worker processes of the gate: up to this many entries run at once "
            "(at most the cores), each with its share of them for its blocks (at most 4 per core: a larger value is "
            "capped, with a note); the numbers do not depend on it"),
        Key("timeout", "float > 0 (seconds)", "no", "1800", "default time limit of every entry (`check --timeout` overrides it)"),
        Key("memory_limit", "size (`\"2GiB\"`, `\"512MB\"`, bytes) or `\"none\"`", "no", "\"2GiB\"",
            "memory each process of an entry (the entry and its workers) may allocate beyond what it inherits when "
            "forked (RLIMIT_DATA); an entry past it is stopped "
            "and reported as ERROR (`check --memory-limit` overrides it)"),
        Key("sequential", "boolean", "no", _gate_default("sequential"),
            "audits certify in looks and stop early on a certified violation or when their budget cannot certify one "
            "(`samples` is the maximum); false: every audit draws its whole budget (also `dpaudit check --fixed-budget`); "
            "score audits always use every score in their file"),
    ))
    audit = Section("audit", True, "A privacy audit: certify a lower bound on the mechanism's epsilon and fail when it "
                    "exceeds the claim (exit code 1).", (
        Key("name", "string", "yes", "-", "unique name of the entry (also seeds it)"),
        _MECHANISM, _EXAMPLE,
        Key("neighbours", "string `module:attribute` or list of [d, d_prime]", "unless d/d_prime or example", "example's",
            "adjacent pairs (a list, or a callable returning one, called when the entry runs); several pairs are screened "
            "and the `top` most leaking certified"),
        Key("d", "any TOML value", "with d_prime", "-", "one input of a single adjacent pair"),
        Key("d_prime", "any TOML value", "with d", "-", "the other input of the pair"),
        Key("epsilon", "float >= 0", "unless example", "example's", "claimed epsilon"),
        Key("delta", "float in [0, 1)", "no", "example's, else 0.0", "claimed delta"),
        Key("samples", "integer in [200, 1e11]", "no", "[gate] samples", "samples per input"),
        _CONFIDENCE,
        Key("top", "integer >= 1", "no", "3", "how many of the screened pairs are certified"),
        Key("claim", "float (GDP mu), event string or table {epsilon, delta}", "no", "the mechanism's `.event`",
            "the claimed privacy curve: a mu-GDP claim, any event tree (parsed safely, e.g. `\"Gaussian(1.0)\"`) or an "
            "(epsilon, delta) guarantee; the entry fails (exit code 1) when a certified trade-off point lies below it"),
        Key("curve", "boolean", "no", "true when there is a claim (or `.event`) and one pair",
            "audit the whole privacy curve (`audit_curve`: certified trade-off points and a mu-GDP lower bound) "
            "rather than one (epsilon, delta) point"),
        Key("sequential", "boolean", "no", "[gate] sequential", "stop early (true) or draw the whole budget (false)"),
        Key("replay", "boolean", "no", "false",
            "also record/replay the mechanism on the entry's pairs against its (epsilon, delta) claim, before the "
            "audits, as a row \"NAME (replay)\" (as a `[[replay]]` entry: a violation fails with exit code 1, an "
            "uninstrumentable mechanism is an error, exit code 3; diverging draws are reported and the statistical "
            "audit decides)"),
        _TIMEOUT,
    ))
    accuracy = Section("accuracy", True, "An accuracy theorem P[error > alpha] <= beta, tested with an exact binomial test "
                       "(rejected: exit code 1).", (
        Key("name", "string", "yes", "-", "unique name of the entry"),
        _MECHANISM, _EXAMPLE,
        Key("data", "string `module:attribute` or any TOML value", "unless example", "example's", "the input the theorem is about"),
        Key("beta", "float in (0, 1)", "no", "0.05", "the theorem's failure probability"),
        Key("alpha", "float >= 0", "unless the mechanism has .accuracy(beta)", "mechanism.accuracy(beta)", "the theorem's error bound"),
        Key("error", "string `module:callable`", "unless the mechanism has .error", "mechanism.error",
            "`error(data, outputs) -> ndarray` of per-output errors"),
        Key("samples", "integer in [1, 1e11]", "no", "[gate] accuracy_samples", "runs of the mechanism"),
        _CONFIDENCE,
        _TIMEOUT,
    ))
    _RISK = (
        Key("max_tpr_at_fpr", "[tpr, fpr], 0 < fpr < 1, fpr <= tpr < 1", "no", "none",
            "attack risk (Kulynych et al. 2024): also fail when the accountant's upper bound on any membership "
            "attack's true-positive rate at false-positive rate fpr exceeds tpr"),
        Key("max_advantage", "float in [0, 1)", "no", "none",
            "attack risk: also fail when the upper bound on any attack's advantage (TPR - FPR) exceeds it"),
    )
    common = (
        Key("name", "string", "yes", "-", "unique name of the entry"),
        Key("kind", "string", "no", "\"event\" when `event` is given, else \"composition\"",
            "which accountant question: \"composition\", \"dpsgd\" or \"event\""),
        Key("max_epsilon", "float >= 0", "yes (kind \"event\": one of max_epsilon/max_delta)", "-",
            "the budget: the entry fails (exit code 1) when the accountant's upper bound on epsilon exceeds it"),
        _TIMEOUT,
    )
    budget = Section("budget", True, "A budget assertion: the accountant's upper bound on epsilon must stay within "
                     "max_epsilon. Keys depend on `kind`.", common, variants=(
        ("composition", (
            Key("epsilon", "float >= 0", "yes", "-", "epsilon of each step"),
            Key("k", "integer >= 1", "yes", "-", "number of steps"),
            Key("delta", "float in [0, 1)", "yes", "-", "total delta of the composition"),
            Key("theorem", "string", "no", "\"optimal\"", "\"basic\", \"advanced\" (Dwork-Rothblum-Vadhan) or \"optimal\" "
                "(Kairouz-Oh-Viswanath)"),
            Key("step_delta", "float in [0, 1)", "no", "0.0", "delta of each step"),
            Key("sampling_probability", "float in (0, 1]", "no", "none", "Poisson subsampling of each step (amplification)"),
        )),
        ("dpsgd", (
            Key("noise_multiplier", "float > 0", "yes", "-", "sigma / clipping norm of the Gaussian noise"),
            Key("sampling_probability", "float in (0, 1]", "yes", "-", "Poisson sampling rate of each step (batch / dataset size)"),
            Key("steps", "integer >= 1", "yes", "-", "number of training steps"),
            Key("delta", "float in [0, 1)", "yes", "-", "target delta"),
            Key("accountant", "string", "no", "\"pld\"", "\"pld\" (privacy loss distributions, tight) or \"rdp\" (Renyi DP)"),
            Key("neighbouring", "string", "no", "\"add_remove\"", "\"add_remove\" or \"replace_one\""),
            *_RISK,
        )),
        ("event", (
            Key("event", "string", "yes", "-", "any privacy event tree written as in `dpaudit.events`, e.g. "
                "`\"SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)\"` (parsed safely, never evaluated as Python)"),
            Key("accountant", "string", "no", "\"pld\"", "\"pld\", \"rdp\" or \"zcdp\"; it must support the event"),
            Key("neighbouring", "string", "no", "\"add_remove\"", "\"add_remove\" or \"replace_one\""),
            Key("delta", "float in [0, 1)", "with max_epsilon", "-", "the delta at which epsilon is bounded"),
            Key("epsilon", "float >= 0", "with max_delta", "-", "the epsilon at which delta is bounded"),
            Key("max_delta", "float in [0, 1)", "one of max_epsilon/max_delta", "-",
                "fail (exit code 1) when the accountant's upper bound on delta at `epsilon` exceeds it"),
            *_RISK,
        )),
    ))
    score_audit = Section("score_audit", True, "An audit of a training run from the scores a training job wrote (canary "
                          "scores, membership-inference style): fails when the certified epsilon lower bound exceeds the claim.", (
        Key("name", "string", "yes", "-", "unique name of the entry"),
        Key("scores", "string (file name)", "yes", "-", "score file, relative to the config: .csv, .npy, .npz or .parquet; "
            "many-run files hold one row per training run (its score, whether the canary was in), one-run files one row per canary"),
        Key("epsilon", "float >= 0", "one of epsilon/event", "-", "claimed epsilon at `delta`"),
        Key("event", "string", "one of epsilon/event", "-", "a privacy event whose PLD epsilon at `delta` is the claim"),
        Key("delta", "float in [0, 1)", "no", "1e-05", "the claim's delta (> 0 with an event)"),
        Key("one_run", "boolean", "no", "false", "true: one training run, one row per canary (Steinke, Nasr & Jagielski 2023)"),
        Key("method", "\"steinke\" or \"fdp\"", "no", "\"steinke\"", "one run: \"fdp\" adds the f-DP test of Mahloujifar, "
            "Melis & Chaudhuri 2024 against the claimed curve (`mu`, else the `event`'s curve); the entry fails if it is rejected"),
        Key("mu", "float > 0", "no", "-", "with method = \"fdp\": a claimed GDP mu whose curve is tested"),
        _CONFIDENCE,
        Key("seed", "integer >= 0", "no", "[gate] seed", "seed of the audit"),
        Key("score_column", "string", "no", "\"score\"", "name of the score column"),
        Key("label_column", "string", "no", "\"included\"", "name of the 0/1 column: was the canary in the run"),
        _TIMEOUT,
    ))
    replay = Section("replay", True, "Record/replay of a mechanism on adjacent pairs (`dpaudit.replay`), run before the "
                     "audits: fails when a measured shift implies an epsilon above the claim; a mechanism that cannot be "
                     "instrumented is an error; diverging draws are reported, not failed.", (
        Key("name", "string", "yes", "-", "unique name of the entry"),
        _MECHANISM, _EXAMPLE,
        Key("neighbours", "string `module:attribute` or array of [d, d_prime]", "one of neighbours/d/generated/example",
            "the example's", "the adjacent pairs replayed"),
        Key("d", "array", "with d_prime", "-", "one input"),
        Key("d_prime", "array", "with d", "-", "the adjacent input"),
        Key("generated", "string", "no", "-", "\"datasets\" (hypothesis-drawn records and their neighbours) or \"statdp\" "
            "(the StatDP query-vector patterns plus drawn vectors) instead of listed pairs"),
        Key("count", "integer >= 1", "no", "200", "how many generated pairs"),
        Key("length", "integer >= 1", "no", "8", "records (datasets) or answers (statdp) per generated input"),
        Key("neighbouring", "string", "no", "\"add_remove\"", "relation of the generated datasets: \"add_remove\" or "
            "\"replace_one\""),
        Key("epsilon", "float >= 0", "no", "the mechanism's .privacy", "claimed epsilon"),
        Key("delta", "float in [0, 1)", "no", "the mechanism's, else 0", "claimed delta"),
        Key("event", "string", "no", "-", "a claimed privacy event instead of epsilon/delta, compared on its curve"),
        Key("seed", "integer >= 0", "no", "[gate] seed", "seed of the replay's randomness and of the generated pairs"),
        Key("seeds", "integer >= 2", "no", "3", "independent randomness draws per pair"),
        _TIMEOUT,
    ))
    training_audit = Section("training_audit", True, "An audit of a real training stack (Opacus): canaries planted in "
                             "training runs of the team's own train function, scored, and certified, after one run witnessed "
                             "without canaries (records read, noisy steps, clipping, noise: dpaudit.training.witness_run); "
                             "fails when the certified epsilon lower bound exceeds the claim (given, or read from the "
                             "PrivacyEngine) or another of its checks flags the stack, naming the checks.", (
        Key("name", "string", "yes", "-", "unique name of the entry"),
        Key("train", "string", "yes", "-", "`package.module:function`, `train(dataset, seed, hooks) -> model`, calling "
            "`hooks.attach(model, optimizer, privacy_engine)` after `make_private` (see the Opacus tutorial)"),
        Key("dataset", "string", "yes", "-", "`package.module:attribute`: a map-style dataset of (input, label), or a "
            "function returning one"),
        Key("canary", "string", "no", "\"dirac_gradient\"", "canary preset: \"dirac_gradient\" (white-box), "
            "\"mislabelled\" or \"out_of_distribution\" (black-box)"),
        Key("runs", "integer >= 4", "one of runs/canaries", "-", "many runs, half with one canary"),
        Key("canaries", "integer >= 2", "one of runs/canaries", "-", "one run with this many canaries, each in with "
            "probability 1/2 (Steinke, Nasr & Jagielski 2023)"),
        Key("epsilon", "float >= 0", "no", "from the engine", "claimed epsilon at `delta`; omitted: dpaudit's accountant "
            "on the PrivacyEngine's history"),
        Key("delta", "float in [0, 1)", "no", "1e-05", "the claim's delta"),
        _CONFIDENCE,
        Key("seed", "integer >= 0", "no", "[gate] seed", "seed of the runs and the audit"),
        Key("gradient_norm_factor", "float > 0", "no", "1.0", "Dirac canary gradient norm in clipping norms (> 1 "
            "probes whether clipping happens)"),
        Key("num_classes", "integer >= 2", "no", "from the labels", "the model's output width"),
        Key("workers", "positive integer", "no", "1", "processes training runs"),
        _TIMEOUT,
        Key("preset", "string", "no", "-", "\"final_model\": audit what the released model alone reveals "
            "(`training.audit_final_model`; canary \"blank\", \"clipbkd\" or \"crafted_gradient\", runs >= 8, no "
            "canaries/gradient_norm_factor/num_classes); the keys below are for this preset only"),
        Key("initialisation", "string", "no", "\"pretrained\"", "final_model: \"pretrained\" (worst case, pre-trained "
            "on the public split) or \"random\""),
        Key("public_fraction", "float in (0, 1)", "no", "0.5", "final_model: share of the dataset kept out as public"),
        Key("pretrain_epochs", "integer >= 0", "no", "5", "final_model: epochs of non-private pre-training"),
        Key("make_model", "string", "no", "-", "final_model: `package.module:function` building the train function's model"),
    ))
    return gate, audit, accuracy, budget, score_audit, training_audit, replay


SECTIONS: tuple[Section, ...] = _sections()


def _allowed_from(error: Exception) -> set[str]:
    found = re.search(r"allowed: ([^)]*)\)", str(error))
    if not found:
        raise AssertionError(f"the parser's error does not list the allowed keys: {error}")
    return {name.strip() for name in found.group(1).split(",") if name.strip()}


def _parser_keys() -> dict[str, set[str]]:
    """What the parser accepts, asked from the parser: section (or budget kind) -> allowed keys."""
    from ..errors import ConfigError
    from . import config

    probe = "__schema_probe__"
    accepted: dict[str, set[str]] = {}
    calls = {
        "gate": lambda: config._settings("probe", {probe: 1}),
        "audit": lambda: config._audit("probe", 0, {probe: 1}, config.GateSettings()),
        "accuracy": lambda: config._accuracy("probe", 0, {probe: 1}, config.GateSettings()),
    }
    try:
        from .score_audit import parse_score_audit

        calls["score_audit"] = lambda: parse_score_audit("probe", 0, {probe: 1}, config.GateSettings())
    except ImportError:  # pragma: no cover - score audits not part of this build
        pass
    from .replay_entries import parse_replay

    calls["replay"] = lambda: parse_replay("probe", 0, {probe: 1}, config.GateSettings())

    from .training_audit import parse_training_audit

    calls["training_audit"] = lambda: parse_training_audit("probe", 0, {probe: 1}, config.GateSettings())
    for kind in getattr(config, "_BUDGET_KEYS", {}):
        calls[f"budget/{kind}"] = lambda kind=kind: config._budget("probe", 0, {"kind": kind, probe: 1}, config.GateSettings())
    for label, call in calls.items():
        try:
            call()
        except ConfigError as error:
            accepted[label] = _allowed_from(error)
        else:  # pragma: no cover - the probe key is never accepted
            raise AssertionError(f"the parser accepted an unknown key in {label}")
    return accepted


def _parser_sections() -> set[str]:
    import tempfile
    from pathlib import Path

    from ..errors import ConfigError
    from .config import load_config

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "probe.toml"
        path.write_text("[__schema_probe__]\n")
        try:
            load_config(path)
        except ConfigError as error:
            found = re.search(r"allowed: ([^)]*)\)", str(error))
            if found:
                return {s.strip().strip("[]") for s in found.group(1).split(",")}
    raise AssertionError("the parser did not list its sections")


def check_against_parser() -> list[str]:
    """Differences between this description and what the parser accepts (empty when they agree)."""
    problems = []
    documented = {s.name for s in SECTIONS}
    sections = _parser_sections()
    problems += [f"section [{s}] is accepted by the parser but not described in dpaudit/gate/schema.py" for s in sorted(sections - documented)]
    problems += [f"section [{s}] is described but the parser does not accept it" for s in sorted(documented - sections)]
    accepted = _parser_keys()
    described: dict[str, set[str]] = {}
    for section in SECTIONS:
        if section.variants:
            for kind, keys in section.variants:
                described[f"{section.name}/{kind}"] = {k.name for k in (*section.keys, *keys)}
        else:
            described[section.name] = {k.name for k in section.keys}
    for label in sorted(set(accepted) | set(described)):
        parser_keys, schema_keys = accepted.get(label), described.get(label)
        if parser_keys is None:
            problems.append(f"{label}: described, but the parser has no such section or kind")
        elif schema_keys is None:
            problems.append(f"{label}: accepted by the parser, not described (keys: {', '.join(sorted(parser_keys))})")
        else:
            problems += [f"{label}: key {k!r} is accepted by the parser but not described" for k in sorted(parser_keys - schema_keys)]
            problems += [f"{label}: key {k!r} is described but the parser rejects it" for k in sorted(schema_keys - parser_keys)]
    return problems


def _table(keys: tuple[Key, ...]) -> list[str]:
    lines = ["| key | type | required | default | meaning |", "|---|---|---|---|---|"]
    for key in keys:
        cells = (f"`{key.name}`", key.type, key.required, key.default, key.description)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines


def reference_markdown() -> str:
    """The configuration reference (Markdown), from :data:`SECTIONS`; raises if it disagrees with the parser."""
    problems = check_against_parser()
    if problems:
        raise RuntimeError("the gate's config description disagrees with its parser:\n" + "\n".join(problems))
    lines = []
    for section in SECTIONS:
        lines += [f"## `{section.header}`", "", section.description, "", *_table(section.keys), ""]
        for kind, keys in section.variants:
            lines += [f"### `kind = \"{kind}\"`", "", *_table(keys), ""]
    return "\n".join(lines)
