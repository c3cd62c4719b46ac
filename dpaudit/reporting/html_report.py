"""A self-contained HTML page of a gate run: one file a reviewer can open anywhere, offline.

Figures are embedded as base64 PNG (``data:`` URIs); the style sheet is inline; there is no script, web
font or any other network resource. The layout is a single column that fits a phone (on a narrow
screen each table row becomes a stacked card, figures shrink to the width) and prints cleanly (no backgrounds, figures
kept whole on a page, the verdict repeated in plain words rather than colour alone).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._entries import KIND_TITLES, Entry, entries
from .text import unique_slugs, visible

__all__ = ["render_html", "STYLE"]

STYLE = """
:root { --pass: #1a7f37; --fail: #cf222e; --error: #9a6700; --skip: #57606a; --line: #d0d7de; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; line-height: 1.5;
       margin: 0 auto; padding: 1rem; max-width: 72rem; color: #1f2328; background: #fff; font-size: 16px; }
h1 { font-size: 1.5rem; margin: 0.5rem 0; overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid var(--line); padding-bottom: 0.25rem; }
h3 { font-size: 1.05rem; overflow-wrap: anywhere; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 0.1rem 0.6rem; border-radius: 1rem; color: #fff; font-weight: 600; font-size: 0.9rem; }
.passed { background: var(--pass); } .failed { background: var(--fail); } .error { background: var(--error); }
.skipped { background: var(--skip); }
.summary { display: grid; grid-template-columns: repeat(auto-fit, minmax(9rem, 1fr)); gap: 0.5rem; margin: 1rem 0; }
.summary div { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem 0.75rem; }
.summary b { display: block; font-size: 1.3rem; }
.table { overflow-x: auto; -webkit-overflow-scrolling: touch; border: 1px solid var(--line); border-radius: 6px; }
table { border-collapse: collapse; width: 100%; min-width: 36rem; font-size: 0.92rem; }
th, td { text-align: left; vertical-align: top; padding: 0.4rem 0.6rem; border-bottom: 1px solid var(--line); }
th { background: var(--soft); font-weight: 600; }
tr:last-child td { border-bottom: none; }
td.name { font-weight: 600; overflow-wrap: anywhere; }
ul.details { margin: 0.25rem 0 0; padding-left: 1.1rem; color: #424a53; font-size: 0.88rem; }
figure { margin: 1rem 0; break-inside: avoid; page-break-inside: avoid; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { font-size: 0.85rem; color: #424a53; }
.note { color: #424a53; font-size: 0.92rem; }
@media (max-width: 40rem) {
  body { padding: 0.6rem; font-size: 15px; }
  h1 { font-size: 1.25rem; }
  table { min-width: 0; }
  thead { display: none; }
  tr { display: block; border-bottom: 1px solid var(--line); padding: 0.3rem 0; }
  tr:last-child { border-bottom: none; }
  td { display: block; border: none; padding: 0.15rem 0.6rem; overflow-wrap: anywhere; }
}
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  .badge { color: #000; background: none !important; border: 1px solid #000; }
  .table { overflow: visible; border: none; }
  table { min-width: 0; }
  th { background: none; }
  .summary div { background: none; }
  h2 { break-after: avoid; page-break-after: avoid; }
}
"""


def _e(text: Any) -> str:
    return html.escape(visible(text), quote=True)


def _badge(status: str) -> str:
    label = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "skipped": "skipped"}[status]
    return f'<span class="badge {status}">{label}</span>'


def _image(path: Path, caption: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_e(caption)}" loading="lazy">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def _row(case: Entry) -> str:
    details = "".join(f"<li>{_e(line)}</li>" for line in case.details)
    return (f'<tr><td class="name">{_e(case.name)}</td><td>{_badge(case.status)}</td>'
            f"<td>{_e(case.verdict)}{f'<ul class=details>{details}</ul>' if details else ''}</td></tr>")


def render_html(result: Any, directory: str | Path | None = None, slug: Callable[[str], str] | None = None) -> str:
    """The page of a ``GateResult``; PNG figures found in ``directory`` (named as the gate report names
    them, ``audit-<slug>-outputs.png``, ``audit-<slug>-bound.png``, ``budget-<slug>.png``, any other PNG
    under "Other figures") are embedded."""
    cases = list(entries(result))
    status = getattr(result, "status", "PASSED" if result.passed else "FAILED")
    count = {s: sum(1 for c in cases if c.status == s) for s in ("passed", "failed", "error", "skipped")}
    page_status = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error"}.get(status, "failed")
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>dpaudit gate report: {_e(status)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        f'<h1>dpaudit gate report <span class="badge {page_status}">{_e(status)}</span></h1>',
        f'<p class="note">Configuration <code>{_e(result.config)}</code>, seed {_e(result.seed)}, '
        f"{float(result.seconds):.1f} s. Audit numbers are <strong>lower bounds</strong> on epsilon holding with the "
        "stated confidence; budget numbers are <strong>upper bounds</strong>.</p>",
        '<div class="summary">',
        *(f"<div><b>{count[s]}</b>{label}</div>" for s, label in (("passed", "passed"), ("failed", "failed"),
                                                                  ("error", "could not be completed"), ("skipped", "skipped"))),
        f"<div><b>{float(result.false_alarm_bound):.3g}</b>false-alarm bound (whole gate)</div>",
        "</div>",
    ]
    for kind, title in KIND_TITLES.items():
        rows = [c for c in cases if c.kind == kind]
        if rows:
            parts += [f"<h2>{_e(title)}</h2>", '<div class="table"><table>',
                      "<thead><tr><th>name</th><th>result</th><th>verdict and evidence</th></tr></thead><tbody>",
                      *(_row(c) for c in rows), "</tbody></table></div>"]
    if slug is None:  # the gate report's names: one file name per entry
        slug = unique_slugs(row["name"] for row in (*result.audits, *result.budgets)).__getitem__
    parts += _figures(result, Path(directory) if directory is not None else None, slug)
    parts += ['<p class="note">Written by dpaudit. This page is self-contained: it loads nothing from the network.</p>',
              "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _figures(result: Any, directory: Path | None, slug: Callable[[str], str]) -> list[str]:
    if directory is None or not directory.is_dir():
        return []
    used: set[str] = set()
    blocks: list[str] = []
    named = [(row["name"], [(f"audit-{slug(row['name'])}-outputs.png", "outputs on d and d_prime with the witness event"),
                            (f"audit-{slug(row['name'])}-bound.png", "certified bound against samples"),
                            (f"curve-{slug(row['name'])}.png", "certified trade-off points against the claimed curve")])
             for row in result.audits]
    named += [(row["name"], [(f"budget-{slug(row['name'])}.png", "epsilon upper bound against length")]) for row in result.budgets]
    for name, files in named:
        images = [_image(directory / file, f"{name}: {caption}") for file, caption in files if (directory / file).is_file()]
        used.update(file for file, _ in files)
        if images:
            blocks += [f"<h3>{_e(name)}</h3>", *images]
    others = sorted(p for p in directory.glob("*.png") if p.name not in used)
    if others:
        blocks += ["<h3>Other figures</h3>", *(_image(p, p.stem) for p in others)]
    return ["<h2>Figures</h2>", *blocks] if blocks else []
