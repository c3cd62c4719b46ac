"""Rendering of results: text tables, JSON and escaping (``text``), PNG plots (``plots``), gate reports."""

from .text import format_number, format_table, json_ready, markdown_cell, to_json, visible

__all__ = ["format_number", "format_table", "json_ready", "to_json", "visible", "markdown_cell"]
