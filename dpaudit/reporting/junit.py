"""JUnit XML of a gate run, for the test views of CI servers (Jenkins, GitLab, GitHub test reporters).

The document follows the common Jenkins/Ant JUnit format: ``<testsuites>`` holding one ``<testsuite>``
(the configuration) with one ``<testcase>`` per audit, accuracy check and budget (``classname``
``dpaudit.audit``, ``dpaudit.accuracy`` or ``dpaudit.budget``). A finding is a ``<failure>`` whose
message is the verdict and whose text carries the witness and counts; an entry that could not be
completed is an ``<error>``; an accuracy theorem that does not apply is ``<skipped>``.
"""

from __future__ import annotations

import datetime
import socket
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .._io import atomic_write_text
from ._entries import entries

__all__ = ["junit_xml", "write_junit"]

_FAILURE_TYPES = {"audit": "PrivacyViolation", "accuracy": "AccuracyTheoremRejected", "budget": "BudgetExceeded",
                  "score_audit": "PrivacyViolation", "replay": "PrivacyViolation"}


def _clean(text: str) -> str:
    """Drop the characters XML 1.0 cannot carry (control characters other than tab and newlines)."""
    return "".join(c for c in str(text) if c in "\t\n\r" or (" " <= c <= "\ud7ff") or ("\ue000" <= c <= "\ufffd")
                   or ("\U00010000" <= c <= "\U0010ffff"))


def junit_xml(result: Any, *, timestamp: datetime.datetime | None = None, hostname: str | None = None) -> str:
    """The JUnit XML document (UTF-8 text with an XML declaration) of a ``GateResult``."""
    cases = list(entries(result))
    counts = {status: sum(1 for c in cases if c.status == status) for status in ("failed", "error", "skipped")}
    stamp = (timestamp or datetime.datetime.now(datetime.timezone.utc)).replace(microsecond=0)
    totals = {"tests": str(len(cases)), "failures": str(counts["failed"]), "errors": str(counts["error"]),
              "time": f"{float(result.seconds):.3f}"}
    suites = ET.Element("testsuites", {"name": "dpaudit check", **totals})
    suite = ET.SubElement(suites, "testsuite", {"name": _clean(f"dpaudit check {result.config}"), **totals,
                                                "skipped": str(counts["skipped"]),
                                                "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S"),
                                                "hostname": _clean(hostname or socket.gethostname() or "localhost")})
    properties = ET.SubElement(suite, "properties")
    for name, value in (("config", result.config), ("seed", result.seed), ("status", getattr(result, "status", "")),
                        ("false_alarm_bound", f"{float(result.false_alarm_bound):.6g}")):
        ET.SubElement(properties, "property", {"name": name, "value": _clean(str(value))})
    for case in cases:
        element = ET.SubElement(suite, "testcase", {"name": _clean(case.name), "classname": f"dpaudit.{case.kind}",
                                                    "time": f"{case.seconds:.3f}"})
        body = _clean("\n".join((case.verdict, *case.details)))
        if case.status == "failed":
            ET.SubElement(element, "failure", {"message": _clean(case.verdict), "type": _FAILURE_TYPES[case.kind]}).text = body
        elif case.status == "error":
            error = case.row["error"]
            ET.SubElement(element, "error", {"message": _clean(case.verdict), "type": _clean(error.get("type") or "Error")}).text = body
        elif case.status == "skipped":
            ET.SubElement(element, "skipped", {"message": _clean(case.verdict)})
        if case.status in ("passed", "skipped"):  # a failure's or error's own text already carries the body
            ET.SubElement(element, "system-out").text = body
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=False).join(('<?xml version="1.0" encoding="UTF-8"?>\n', "\n"))


def write_junit(result: Any, path: str | Path) -> Path:
    """Write the JUnit XML of a gate run to ``path`` atomically (a failure leaves any previous file whole)."""
    return atomic_write_text(path, junit_xml(result))
