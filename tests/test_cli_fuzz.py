"""Hypothesis-generated gate files and command lines: never a traceback, never exit 1 without a finding."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpaudit.cli import main

sys.path.insert(0, str(Path(__file__).parent))  # gate.fault_mechanisms

M = "gate.fault_mechanisms"
EXIT_CODES = {0, 1, 2, 3}

scalars = st.one_of(st.integers(-3, 3_000), st.floats(allow_nan=True, allow_infinity=True, width=32),
                    st.sampled_from(["", "x", f"{M}:laplace", f"{M}:raises", f"{M}:all_nan", f"{M}:missing", "no.module:thing",
                                     "laplace", "gaussian", "optimal", "pld", "rdp", "dpsgd", "composition"]),
                    st.booleans(), st.lists(st.floats(-2, 2, width=16), max_size=3))
audit_keys = st.sampled_from(["name", "mechanism", "example", "d", "d_prime", "neighbours", "epsilon", "delta", "samples",
                              "confidence_level", "top", "timeout", "bogus"])
budget_keys = st.sampled_from(["name", "kind", "epsilon", "k", "delta", "max_epsilon", "theorem", "noise_multiplier",
                               "sampling_probability", "steps", "accountant", "timeout"])
valid_audit = st.fixed_dictionaries({
    "name": st.text("abcxyz", min_size=1, max_size=4), "mechanism": st.sampled_from([f"{M}:laplace", f"{M}:raises", f"{M}:all_nan"]),
    "d": st.just([0.0]), "d_prime": st.sampled_from([[1.0], [0.0], [3.0]]), "epsilon": st.sampled_from([0.0, 0.5, 1.0, 5.0]),
    "samples": st.sampled_from([200, 1_000, 2_000])})


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value == float("inf") else ("-inf" if value == float("-inf") else repr(value)))
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def _toml(document: dict) -> str:
    lines = []
    for section, tables in document.items():
        if section == "gate":
            lines.append("[gate]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in tables.items()]
            continue
        for table in tables:
            lines.append(f"[[{section}]]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


valid_budget = st.fixed_dictionaries({
    "name": st.text("klmn", min_size=1, max_size=4), "epsilon": st.sampled_from([0.01, 0.1, 1.0]), "k": st.integers(1, 500),
    "delta": st.sampled_from([1e-5, 1e-3]), "max_epsilon": st.sampled_from([0.5, 5.0, 50.0])})

documents = st.fixed_dictionaries({
    "gate": st.fixed_dictionaries({"workers": st.just(1)}, optional={
        "seed": st.integers(-1, 5), "timeout": st.one_of(*[st.just(60.0)] * 4, scalars),
        "false_alarm_rate": st.one_of(*[st.just(0.05)] * 4, scalars)}),
    "audit": st.lists(st.one_of(valid_audit, valid_audit, valid_audit, st.dictionaries(audit_keys, scalars, max_size=6)),
                      min_size=1, max_size=2),
    "budget": st.lists(st.one_of(valid_budget, valid_budget, st.dictionaries(budget_keys, scalars, max_size=6)), max_size=2),
})


def _check_run(argv, capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in EXIT_CODES, (code, err)
    assert "Traceback" not in out + err
    return code, out, err


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(document=documents, garbage=st.one_of(st.none(), st.text(max_size=40)))
def test_generated_gate_files(tmp_path_factory, capsys, document, garbage):
    path = tmp_path_factory.mktemp("fuzz") / "gate.toml"
    path.write_text(_toml(document) if garbage is None else garbage)
    code, out, err = _check_run(["check", str(path), "--json"], capsys)
    if code in (0, 1, 3):
        payload = json.loads(out)
        rows = payload["audits"] + payload["accuracy"] + payload["budgets"]
        findings = [r for r in rows if not r.get("error") and not r["passed"]]
        errors = [r for r in rows if r.get("error")]
        assert (code == 1) == bool(findings)
        assert (code == 3) == (not findings and bool(errors))
    else:
        assert err.startswith("dpaudit: error: ") and err.count("\n") == 1


words = st.sampled_from(["--epsilon", "--delta", "-k", "--k", "--samples", "--seed", "--json", "--d", "--d-prime", "--neighbours",
                         "--sampling-probability", "--target-delta", "--steps", "--noise-multiplier", "--statdp", "--top",
                         "--workers", "--timeout", "--symbolic", "1", "0", "-1", "0.5", "1e-5", "1e3", "nan", "inf", "[0]",
                         "[1]", "[0", "abc", f"{M}:laplace", f"{M}:raises", "x:y"])
commands = st.sampled_from([["budget", "basic"], ["budget", "advanced"], ["budget", "optimal"], ["budget", "amplify"],
                            ["budget", "compare"], ["budget", "per-step"], ["audit", f"{M}:laplace", "--samples", "1000"],
                            ["audit", f"{M}:raises", "--samples", "500"], ["accuracy"], ["check"], ["nonsense"], []])


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(command=commands, rest=st.lists(words, max_size=8))
def test_generated_command_lines(capsys, command, rest):
    argv = command + rest
    if command[:1] == ["audit"] and "--samples" in rest:
        return  # keep every generated audit small
    code, out, err = _check_run(argv, capsys)
    if code == 1:  # only a finding: an audit that certified a violation
        assert command[:1] == ["audit"] and "VIOLATED" in out + err
