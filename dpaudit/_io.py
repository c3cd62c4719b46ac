"""Atomic output: a failure or an interrupt never leaves a truncated file or a half-written report.

Files are written to a temporary file in the target's directory and moved into place with
``os.replace`` (atomic on POSIX and Windows). A report directory is built beside its target and swapped
in; files of the previous report that the new one does not produce disappear with it (the report's
manifest says which files are the tool's), while files the user put there are carried over.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_write_text", "atomic_write", "check_writable_file", "check_writable_directory", "building_directory",
           "MANIFEST"]

MANIFEST = "manifest.json"


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(temporary_path)`` and move the result onto ``path`` atomically; on any failure the
    previous file (if any) is untouched and the temporary file is removed."""
    target = Path(path)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent if str(target.parent) else ".")
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    return atomic_write(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def check_writable_file(path: str | Path, what: str) -> Path:
    """Raise OSError (naming ``what`` and the path) unless a file can be written at ``path``: its directory
    exists and accepts new files, and the path is not a directory."""
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"cannot write the {what} to {target}: it is a directory")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"cannot write the {what} to {target}: directory {parent} does not exist")
    _probe_directory(parent, what, target)
    return target


def check_writable_directory(path: str | Path, what: str) -> Path:
    """Raise OSError unless ``path`` is (or can be created as) a directory whose parent accepts new entries."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"cannot write the {what} to {target}: it exists and is not a directory")
    parent = target.parent if str(target.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise type(exc)(f"cannot write the {what} to {target}: cannot create {parent} ({exc.strerror or exc})") from exc
    _probe_directory(parent, what, target)
    return target


def _probe_directory(directory: Path, what: str, target: Path) -> None:
    try:
        handle, name = tempfile.mkstemp(prefix=".dpaudit-probe-", dir=directory)
        os.close(handle)
        os.unlink(name)
    except OSError as exc:
        raise type(exc)(f"cannot write the {what} to {target}: {directory} is not writable ({exc.strerror or exc})") from exc


def _owned_files(directory: Path, patterns: tuple[str, ...]) -> set[str]:
    """Names of the files in a previous report directory that the tool wrote (its manifest, or failing
    that the tool's file-name patterns)."""
    manifest = directory / MANIFEST
    try:
        names = json.loads(manifest.read_text())["files"]
        return {str(name) for name in names} | {MANIFEST}
    except (OSError, ValueError, KeyError, TypeError):
        return {p.name for pattern in patterns for p in directory.glob(pattern)} | {MANIFEST}


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Block SIGINT (main thread, POSIX) while a few renames complete, so Ctrl-C cannot split them."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextmanager
def building_directory(target: str | Path, patterns: tuple[str, ...] = ("*",)) -> Iterator[Path]:
    """Yield a fresh directory beside ``target`` to build a report in; on success write its manifest and
    swap it in place of ``target``. Files in ``target`` that a previous report did not write are carried
    over; files the previous report wrote and this one does not are removed. On failure ``target`` is
    untouched and the build directory is removed."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{target.name}.building-", dir=target.parent))
    try:
        yield build
        produced = sorted(p.name for p in build.iterdir())
        (build / MANIFEST).write_text(json.dumps({"files": produced}, indent=1) + "\n")
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    if not target.exists():
        os.replace(build, target)
        return
    owned = _owned_files(target, patterns)
    backup = Path(tempfile.mkdtemp(prefix=f".{target.name}.previous-", dir=target.parent))
    previous = backup / "report"
    with _interrupts_deferred():
        os.replace(target, previous)
        try:
            os.replace(build, target)
        except BaseException:
            os.replace(previous, target)
            shutil.rmtree(build, ignore_errors=True)
            shutil.rmtree(backup, ignore_errors=True)
            raise
        for entry in previous.iterdir():  # the user's own files stay where they were
            if entry.name not in owned and not (target / entry.name).exists():
                os.replace(entry, target / entry.name)
    shutil.rmtree(backup, ignore_errors=True)
