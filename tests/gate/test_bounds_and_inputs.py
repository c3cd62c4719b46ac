"""Bounded memory and processes, and inputs whose content is wrong: each refused with one line naming it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dpaudit.cli import main

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
M = "gate.fault_mechanisms"
GOOD = f"""
[gate]
workers = 1
[[audit]]
name = "good"
mechanism = "{M}:laplace"
d = [0.0]
d_prime = [1.0]
epsilon = 2.0
samples = 2_000
"""


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize("content, expected", [
    ('{"audits": [{"name": "good", "witness": {"a": 1}, "certification_samples": 1e999}]}', "not finite"),
    ('{"audits": [{"name": "good", "delta": NaN}]}', "NaN"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"audits": [{"name": "good", "witness": {"a": 1}, "certification_samples": 10, "count_p": 11, "count_q": 0}]}',
     "count_p=11"),
    ('{"audits": 3}', "not a dpaudit check result"),
])
def test_bad_baseline_content_is_a_usage_error_naming_the_file(tmp_path, capsys, content, expected):
    config = tmp_path / "gate.toml"
    config.write_text(GOOD)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(content)
    code, out, err = run(capsys, "check", config, "--baseline", baseline)
    assert code == 2 and str(baseline) in err and expected in err and err.count("\n") == 1


def test_a_huge_foreign_baseline_gives_a_short_error(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(GOOD)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"audits": [{"name": f"other-{i}"} for i in range(200_000)]}))
    code, out, err = run(capsys, "check", config, "--baseline", baseline)
    assert code == 2 and str(baseline) in err and "199995 more" in err and len(err) < 1000


def test_a_budget_beyond_every_grid_is_answered_in_bounded_memory(capsys, monkeypatch):
    """Noise 1e-6 over 100 sampled steps: the losses span ~10^11, so the PLD is planned at that scale (its
    upper end infinite, sound) instead of growing; the tightest bound is the closed form's, finite; all inside
    a 512 MiB limit."""
    monkeypatch.setenv("DPAUDIT_MEMORY_LIMIT", "512MiB")
    code, out, err = run(capsys, "budget", "dpsgd", "--noise-multiplier", "1e-6", "--sampling-probability", "0.01",
                         "--steps", "100", "--target-delta", "1e-5", "--json")
    assert code == 0 and not err
    document = json.loads(out)
    assert 1e13 < document["best"]["epsilon_upper"] < 1e14  # mu = 10^6 per step: about mu^2 / 2 * 100 steps


def test_a_tiny_noise_gate_budget_is_answered_exactly(tmp_path, capsys):
    """Gaussian(1e-6) is read off its exact GDP curve: a finding (exit 1), not a memory failure."""
    config = tmp_path / "gate.toml"
    config.write_text('[gate]\nmemory_limit = "512MiB"\n[[budget]]\nname = "tiny-noise"\nevent = "Gaussian(1e-6)"\n'
                      'delta = 1e-5\nmax_epsilon = 8.0\n')
    code, out, err = run(capsys, "check", config)
    assert code == 1 and "tiny-noise" in out and "EXCEEDED" in out


def test_a_mechanism_past_the_memory_limit_is_stopped_with_one_line(capsys, monkeypatch):
    monkeypatch.setenv("DPAUDIT_MEMORY_LIMIT", "512MiB")
    code, out, err = run(capsys, "audit", f"{M}:hoards_memory", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "2",
                         "--samples", "2000", "--workers", "1")
    assert code == 3 and "mechanism" in err and "MemoryError" in err and err.count("\n") == 1


def test_a_gate_entry_past_the_memory_limit_is_that_entrys_error(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(GOOD.replace("workers = 1", 'workers = 1\nmemory_limit = "512MiB"')
                      .replace(f"{M}:laplace", f"{M}:hoards_memory").replace('"good"', '"hoarder"'))
    code, out, err = run(capsys, "check", config)
    assert code == 3 and "hoarder" in out and "MemoryError" in out


def test_a_memory_limit_that_is_not_a_size_is_a_config_error(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(GOOD.replace("workers = 1", 'workers = 1\nmemory_limit = "lots"'))
    code, out, err = run(capsys, "check", config)
    assert code == 2 and "memory_limit" in err and "'2GiB'" in err


def test_workers_are_capped_at_a_few_per_core_with_a_note(tmp_path, capsys):
    code, out, err = run(capsys, "audit", f"{M}:laplace", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "2", "--samples",
                         "2000", "--workers", "100000")
    assert code == 0 and "--workers 100000 capped at" in err
    config = tmp_path / "gate.toml"
    config.write_text(GOOD.replace("workers = 1", "workers = 100000"))
    code, out, err = run(capsys, "check", config)
    assert code == 0 and "workers = 100000 capped at" in err


def test_a_plot_on_a_full_disk_leaves_no_empty_png(tmp_path, capsys, monkeypatch):
    from matplotlib.figure import Figure

    def full_disk(self, path, **kwargs):
        Path(path).write_bytes(b"")
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(Figure, "savefig", full_disk)
    plot = tmp_path / "eps.png"
    code, out, err = run(capsys, "budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps",
                         "10", "--target-delta", "1e-5", "--plot", plot)
    assert code == 3 and "No space left on device" in err and not plot.exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_baseline_witness_for_another_output_width_is_the_baselines_error(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(GOOD)
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", config, "--write-baseline", baseline)[0] == 0
    config.write_text(GOOD.replace(f"{M}:laplace", f"{M}:laplace_pairs_of_outputs"))
    code, out, err = run(capsys, "check", config, "--baseline", baseline)
    assert code == 2 and str(baseline) in err and "width 1" in err and "width 2" in err
    assert "[1/1]" not in out + err  # found before any entry ran
