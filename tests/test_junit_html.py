"""CI-facing reports of ``dpaudit check``: JUnit XML (validated against the Jenkins/Ant schema), the
$GITHUB_STEP_SUMMARY Markdown, and the self-contained report.html (rendered by headless Chromium when one
is installed)."""

from __future__ import annotations

import datetime
import functools
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpaudit.cli import main
from dpaudit.reporting.html_report import render_html
from dpaudit.reporting.junit import junit_xml
from dpaudit.reporting.step_summary import markdown_summary

HERE = Path(__file__).parent
SCHEMA = HERE / "data" / "junit-jenkins.xsd"
sys.path.insert(0, str(HERE))
M = "gate.fault_mechanisms"

CONFIG = f"""
[gate]
seed = 3
workers = 1
samples = 4_000

[[audit]]
name = "laplace <ok>"
mechanism = "{M}:laplace"
d = [0.0]
d_prime = [1.0]
epsilon = 2.0

[[audit]]
name = "laplace claimed too small"
mechanism = "{M}:laplace"
d = [0.0]
d_prime = [1.0]
epsilon = 0.2

[[audit]]
name = "raises"
mechanism = "{M}:raises"
d = [0.0]
d_prime = [1.0]
epsilon = 1.0

[[budget]]
name = "composition within budget"
epsilon = 0.1
k = 10
delta = 1e-6
max_epsilon = 5.0

[[budget]]
name = "composition over budget"
epsilon = 1.0
k = 100
delta = 1e-6
max_epsilon = 5.0
"""


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


pytestmark = pytest.mark.xdist_group("junit-gate-run")  # one worker runs the module's gate once


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory):
    """One gate run with every outcome (pass, violation, error, budget pass and exceed), all outputs on."""
    tmp = tmp_path_factory.mktemp("gate")
    config = tmp / "gate.toml"
    config.write_text(CONFIG)
    summary = tmp / "summary.md"
    summary.write_text("previous step\n")
    junit, report = tmp / "out" / "junit.xml", tmp / "report"
    junit.parent.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        code = main(["check", str(config), "--junit", str(junit), "--report", str(report)])
    return SimpleNamespace(code=code, junit=junit, report=report, summary=summary)


def test_junit_has_one_case_per_entry_with_the_verdict_on_failures(gate_run):
    assert gate_run.code == 1  # a finding (the error alone would be 3)
    root = ET.parse(gate_run.junit).getroot()
    suite = root.find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["laplace <ok>", "laplace claimed too small", "raises", "composition within budget", "composition over budget"]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("5", "2", "1", "0")
    assert cases["laplace <ok>"].find("failure") is None and cases["laplace <ok>"].find("error") is None
    failure = cases["laplace claimed too small"].find("failure")
    assert failure.get("type") == "PrivacyViolation" and failure.get("message").startswith("VIOLATED: epsilon >= ")
    assert "witness event:" in failure.text and "counts:" in failure.text and "certification samples" in failure.text
    error = cases["raises"].find("error")
    assert error.get("type") == "MechanismError" and "failed on purpose" in error.get("message")
    assert cases["composition over budget"].find("failure").get("type") == "BudgetExceeded"
    assert cases["composition within budget"].get("classname") == "dpaudit.budget"
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["seed"] == "3" and properties["status"] == "FAILED"


@functools.cache
def _loaded_schema():
    try:
        from lxml import etree
    except ImportError:
        return None
    return etree, etree.XMLSchema(etree.parse(str(SCHEMA)))


def _schema():
    loaded = _loaded_schema()
    if loaded is None:
        pytest.skip("lxml not installed (pip install '.[test]'): cannot validate against the JUnit schema")
    return loaded


def test_junit_validates_against_the_jenkins_schema(gate_run):
    etree, schema = _schema()
    document = etree.parse(str(gate_run.junit))
    assert schema.validate(document), schema.error_log


def test_the_schema_rejects_what_ci_servers_reject():
    """The schema is not vacuous: a test case without a name, or a count that is not a number, fails."""
    etree, schema = _schema()
    assert not schema.validate(etree.fromstring(b'<testsuites><testsuite name="s" tests="1"><testcase/></testsuite></testsuites>'))
    assert not schema.validate(etree.fromstring(b'<testsuites><testsuite name="s" tests="x"></testsuite></testsuites>'))


def _fake_result(names, statuses):
    audits = []
    for name, status in zip(names, statuses):
        row = {"name": name, "epsilon": 1.0, "delta": 0.0, "epsilon_lower": 0.5 if status == "pass" else 2.0,
               "violated": status == "violated", "passed": status == "pass", "event": "y <= 0.5", "direction": "d -> d_prime",
               "confidence_level": 0.99, "count_p": 10, "count_q": 3, "certification_samples": 100, "ceiling": 3.0,
               "seconds": 0.1}
        if status == "error":
            row = {"name": name, "passed": False, "error": {"kind": "raised", "type": "ValueError", "message": name}, "seconds": 0.0}
        audits.append(row)
    return SimpleNamespace(config="c.toml", seed=0, audits=audits, accuracy=[], budgets=[], seconds=1.0, false_alarm_bound=0.01,
                           passed=all(s == "pass" for s in statuses), status="FAILED")


@given(st.lists(st.tuples(st.text(min_size=1, max_size=30), st.sampled_from(["pass", "violated", "error"])), min_size=1, max_size=5))
def test_junit_of_any_names_is_well_formed_and_counts_add_up(entries):
    """Entry names are user text: control characters and markup never break the XML."""
    names, statuses = zip(*entries)
    text = junit_xml(_fake_result(names, statuses), timestamp=datetime.datetime(2026, 1, 1), hostname="host")
    suite = ET.fromstring(text.encode()).find("testsuite")
    assert int(suite.get("tests")) == len(names)
    assert int(suite.get("failures")) == statuses.count("violated") and int(suite.get("errors")) == statuses.count("error")
    assert len(suite.findall("testcase/failure")) == statuses.count("violated")
    loaded = _loaded_schema()
    if loaded is not None:  # and valid JUnit for CI servers, whatever the names
        etree, schema = loaded
        assert schema.validate(etree.fromstring(text.encode())), schema.error_log


def test_skipped_accuracy_and_score_audit_cases_validate(tmp_path):
    """Entries beyond audits: an accuracy theorem whose precondition fails is <skipped>; a violated score audit
    is a <failure> of class dpaudit.score_audit."""
    result = _fake_result(["a"], ["pass"])
    result.accuracy = [{"name": "precondition fails", "applicable": False, "reason": "data outside the theorem's range",
                        "passed": True, "holds": None, "alpha": 1.0, "beta": 0.05}]
    result.score_audits = [{"name": "canaries", "kind": "score_audit", "passed": False, "violated": True, "epsilon": 1.0,
                            "delta": 1e-5, "epsilon_lower": 2.5, "confidence_level": 0.99, "file": "s.csv", "runs": 1000,
                            "one_run": False, "mu_lower": 1.2, "method": "many runs", "seconds": 0.2}]
    text = junit_xml(result, timestamp=datetime.datetime(2026, 1, 1), hostname="host")
    suite = ET.fromstring(text.encode()).find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["precondition fails"].find("skipped").get("message").startswith("not tested: data outside")
    failure = cases["canaries"].find("failure")
    assert cases["canaries"].get("classname") == "dpaudit.score_audit" and failure.get("message").startswith("VIOLATED: epsilon >= 2.5")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    assert "Score audits (training runs)" in render_html(result) and "canaries" in markdown_summary(result)
    etree, schema = _schema()
    assert schema.validate(etree.fromstring(text.encode())), schema.error_log


def test_unwritable_junit_path_is_an_io_error_before_anything_runs(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(CONFIG)
    for target in (tmp_path / "missing-dir" / "junit.xml", tmp_path):
        code, out, err = run(capsys, "check", config, "--junit", target)
        assert code == 3
        assert "JUnit report" in err and str(target) in err
        assert "[1/" not in err  # nothing ran


def test_step_summary_is_appended_in_markdown(gate_run):
    text = gate_run.summary.read_text()
    assert text.startswith("previous step\n")  # appended, never overwritten
    assert "### dpaudit check" in text and ": FAILED" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "entry" not in line]
    assert len(rows) == 5
    assert rows[0].split("|")[3].strip() == "**FAIL**"  # findings first
    assert "witness event" in text and "**ERROR**" in text


def test_an_unwritable_step_summary_only_warns(tmp_path, capsys, monkeypatch):
    config = tmp_path / "gate.toml"
    config.write_text(CONFIG.split("[[audit]]")[0] + "[[budget]]" + CONFIG.split("[[budget]]")[1])
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no-such-dir" / "summary.md"))
    code, _, err = run(capsys, "check", config)
    assert code == 0 and "warning: could not append the summary" in err


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls, self.tags, self.images = [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for key, value in attrs:
            if key in ("src", "href", "srcset", "action") and value:
                self.urls.append(value)
        if tag == "img":
            self.images += 1


def test_report_html_is_self_contained_with_every_figure_inline(gate_run):
    page = (gate_run.report / "report.html").read_text()
    assert "report.html" in (gate_run.report / "manifest.json").read_text()
    parser = _Collector()
    parser.feed(page)
    assert all(url.startswith("data:image/png;base64,") for url in parser.urls)
    assert "script" not in parser.tags and "link" not in parser.tags
    assert not re.search(r"url\(|@import|https?://", page)
    assert parser.images == len(list(gate_run.report.glob("*.png"))) > 0
    assert "laplace &lt;ok&gt;" in page and "<ok>" not in page  # user text is escaped
    assert '<meta name="viewport"' in page and "@media print" in page and "@media (max-width" in page
    for verdict in ("VIOLATED: epsilon &gt;= ", "EXCEEDED", "ERROR: MechanismError"):
        assert verdict in page


def test_render_html_without_a_directory_has_no_figures():
    page = render_html(_fake_result(["a"], ["violated"]))
    assert "<h2>Figures</h2>" not in page and "VIOLATED" in page and "1</b>failed" in page


def _browser() -> str | None:
    return next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)


def test_report_html_renders_in_headless_chromium_on_a_phone_and_in_print(gate_run, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    page = (gate_run.report / "report.html").resolve().as_uri()
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    shot, pdf = tmp_path / "phone.png", tmp_path / "print.pdf"
    dom = subprocess.run([*base, "--dump-dom", page], capture_output=True, text=True, timeout=120)
    subprocess.run([*base, "--window-size=390,1200", f"--screenshot={shot}", page], capture_output=True, timeout=120)
    subprocess.run([*base, f"--print-to-pdf={pdf}", "--no-pdf-header-footer", page], capture_output=True, timeout=120)
    assert "laplace claimed too small" in dom.stdout and "composition over budget" in dom.stdout
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    assert pixels.shape[1] == 390 and pixels.std() > 0.05  # rendered content, not a blank page
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_curve_audit_rows_show_the_certified_trade_off_point_not_missing_counts():
    """A trade-off curve audit (mode "curve") reports mu, the worst test's alpha/beta and its type I/II counts."""
    result = _fake_result(["curve"], ["violated"])
    row = result.audits[0]
    row.update(mode="curve", claim="Gaussian(noise_multiplier=2.0)", mu_lower=0.7, mu_ceiling=7.8, alpha_upper=0.2,
               beta_upper=0.5, claimed_beta=0.6, count_alpha=35, count_beta=120, epsilon_gaussian_assumption=1.25)
    del row["count_p"], row["count_q"]
    text = junit_xml(result, timestamp=datetime.datetime(2026, 1, 1), hostname="host")
    failure = ET.fromstring(text.encode()).find("testsuite/testcase/failure").text
    assert "mu >= 0.7" in failure and "alpha <= 0.2, beta <= 0.5 vs claimed beta 0.6" in failure
    assert "35 (type I) and 120 (type II)" in failure and "None" not in failure
    assert "not assumption-free" in failure and "not assumption-free" in render_html(result)
