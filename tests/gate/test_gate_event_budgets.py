"""Gate budgets over any event tree: `event = "..."` with accountant, neighbouring, max_epsilon at delta or
max_delta at epsilon; malformed strings are config errors naming file, entry, key and column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpaudit.accountant import PLDAccountant, ZCDPAccountant
from dpaudit.cli import main
from dpaudit.errors import ConfigError
from dpaudit.events import BoundedRange, Gaussian, PoissonSampled, SelfComposed, ZCDP
from dpaudit.gate import load_config
from dpaudit.gate.runner import budget_curve, evaluate_budget

DPSGD = '''
[[budget]]
name = "dpsgd"
event = "SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)"
delta = 1e-5
max_epsilon = {max_epsilon}
'''


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gate.toml"
    path.write_text(text)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_event_kind_is_inferred_and_matches_the_accountant(tmp_path):
    config = load_config(write(tmp_path, DPSGD.format(max_epsilon=2.0)))
    spec = config.budgets[0]
    assert spec.kind == "event" and spec.max_delta is None
    row = evaluate_budget(spec)
    expected = PLDAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)).epsilon(1e-5)
    assert row["epsilon_upper"] == expected and row["passed"] and row["method"] == "PLD accountant"


def test_max_delta_at_epsilon_with_the_zcdp_accountant(tmp_path):
    text = ('[[budget]]\nname = "z"\nkind = "event"\nevent = "SelfComposed(ZCDP(rho=0.01), 100)"\naccountant = "zcdp"\n'
            'epsilon = 7.0\nmax_delta = 1e-5\n')
    spec = load_config(write(tmp_path, text)).budgets[0]
    row = evaluate_budget(spec)
    expected = ZCDPAccountant().compose(SelfComposed(ZCDP(0.01), 100)).delta(7.0)
    assert row["delta_upper"] == expected and row["max_delta"] == 1e-5 and row["passed"] == (expected <= 1e-5)
    xs, curves, key = budget_curve(spec, points=5)
    values = next(iter(curves.values()))
    assert key == "count" and xs[-1] == 100 and values[-1] == expected and values == sorted(values)


def test_cli_exit_codes_and_report_rows_say_which_check(tmp_path, capsys):
    text = DPSGD.format(max_epsilon=0.1).replace("1000)", "100)") + (
        '\n[[budget]]\nname = "br"\nevent = "SelfComposed(BoundedRange(0.1), 100)"\n'
        'accountant = "rdp"\nepsilon = 3.0\nmax_delta = 1e-5\n')
    code, out, err = run(capsys, "check", write(tmp_path, text), "--json", "--report", tmp_path / "report")
    assert code == 1
    rows = {row["name"]: row for row in json.loads(out)["budgets"]}
    assert rows["dpsgd"]["passed"] is False and rows["br"]["passed"] is True
    assert rows["br"]["delta_upper"] <= 1e-5 and rows["br"]["max_delta"] == 1e-5
    assert "delta <=" in err and "vs max 1e-05" in err
    report = (tmp_path / "report" / "report.md").read_text()
    assert "max_delta = 1e-05" in report
    assert code == 1 and PLDAccountant().compose(SelfComposed(BoundedRange(0.1), 100)).epsilon(1e-5) < 3.0


@pytest.mark.parametrize("entry, fragment", [
    ('event = "SelfComposed(PoissonSampled(0.01, Gausian(1.0)), 1000)"\ndelta = 1e-5\nmax_epsilon = 1',
     "key 'event': column 35: unknown event 'Gausian'"),
    ('event = "SelfComposed(Gaussian(-1.0), 10)"\ndelta = 1e-5\nmax_epsilon = 1',
     "key 'event': column 14: Gaussian: noise_multiplier=-1.0 must be > 0"),
    ('event = "Gaussian(__import__(\'os\'))"\ndelta = 1e-5\nmax_epsilon = 1', "column 10: unknown event '__import__'"),
    ('event = "TreeAggregation(1.0, 0)"\ndelta = 1e-5\nmax_epsilon = 1', "steps=0"),
    ('event = "ZCDP(0.0)"\ndelta = 1e-5\nmax_epsilon = 1', "rho=0.0 must be > 0"),
    ('event = "Gaussian(1.0)"\ndelta = 1e-5\nmax_epsilon = 1\nmax_delta = 1e-6', "exactly one of max_epsilon"),
    ('event = "Gaussian(1.0)"\nmax_epsilon = 1', "key 'delta': is required with max_epsilon"),
    ('event = "Gaussian(1.0)"\ndelta = 1e-5\nmax_delta = 1e-6', "key 'epsilon': is required with max_delta"),
    ('event = "Gaussian(1.0)"\ndelta = 1e-5\nmax_epsilon = 1\naccountant = "prv"', "key 'accountant'"),
    ('event = "PoissonSampled(0.1, Gaussian(1.0))"\naccountant = "zcdp"\ndelta = 1e-5\nmax_epsilon = 1',
     "key 'accountant': 'zcdp' cannot account"),
    ('event = "ApproxDP(1.0, 1e-6)"\naccountant = "rdp"\ndelta = 1e-5\nmax_epsilon = 1', "'rdp' cannot account"),
    ('event = 3\ndelta = 1e-5\nmax_epsilon = 1', "key 'event': must be str"),
    ('event = "Gaussian(1.0)"\ndelta = 1e-5\nmax_epsilon = 1\nk = 3', "key 'k': unknown key"),
])
def test_malformed_event_budgets_exit_2_naming_file_entry_key_and_column(tmp_path, capsys, entry, fragment):
    path = write(tmp_path, f'[[budget]]\nname = "b"\n{entry}\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message and "[[budget]] #1 ('b')" in message and fragment in message
    code, _, err = run(capsys, "check", path)
    assert code == 2 and fragment in err
