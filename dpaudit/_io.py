"""Atomic output: a failure or an interrupt never leaves a truncated file or a half-written report, and
never touches a file dpaudit did not write.

Files are written to a temporary file in the target's directory and moved into place with
``os.replace`` (atomic on POSIX and Windows); a new file gets the permissions the umask allows (0666 &
~umask), an existing one keeps its mode. A report directory is dpaudit's own: it is new (or empty) or
carries the manifest (``manifest.json``, ``"written_by": "dpaudit"``) of an earlier report. Anything else
is refused up front: a directory holding other files, a file, a symbolic link, the home directory, ``/``,
the working directory or one of its parents. The report is built in a hidden directory inside the target
and its files are moved in one by one while interrupts are held back; the target itself is never
renamed, so a mount point or a directory in a read-only parent works. A manifest is trusted only for the
files whose content dpaudit recognises as its own (:func:`written_by_dpaudit`): files of the previous
report that this one does not produce are removed only when the manifest names them, they are plain files
matching the report's own names and their content is dpaudit's; a user's file is never deleted or
overwritten.

Output files (``--junit``, ``--write-baseline``, ``budget dpsgd --plot``) are checked the same way before
anything runs (:func:`check_output_file`): never an input of the run (the config, a baseline being read),
never another output of it, and an existing file only when dpaudit wrote it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ConfigError

__all__ = ["atomic_write_text", "atomic_write", "check_writable_file", "check_writable_directory", "check_report_directory",
           "report_directory", "file_mode", "check_output_file", "written_by_dpaudit", "MANIFEST", "WRITTEN_BY", "PNG_METADATA"]

MANIFEST = "manifest.json"
WRITTEN_BY = "dpaudit"
_BUILDING = ".dpaudit-building-"
_OWNER = ".owner"  # inside a build directory: the pid of the process building it
PNG_METADATA = {"Software": WRITTEN_BY}  # every PNG dpaudit writes carries it (a tEXt chunk), so it can be recognised
_PNG_MARK = b"tEXtSoftware\x00" + WRITTEN_BY.encode()
_JSON_LIMIT = 256 * 2**20  # a JSON file larger than this is not read to be recognised (dpaudit's are far smaller)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode(existing: str | Path | None = None) -> int:
    """The mode a written file gets: the existing file's (if any), else 0666 & ~umask."""
    if existing is not None:
        try:
            return stat.S_IMODE(os.stat(existing).st_mode)
        except OSError:
            pass
    return 0o666 & ~_umask()


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(temporary_path)`` and move the result onto ``path`` atomically; on any failure the
    previous file (if any) is untouched and the temporary file is removed. A new file's mode follows the
    umask; an existing file keeps its mode. An empty result (a writer that failed silently) is an error."""
    target = Path(path)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent if str(target.parent) else ".")
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        if temporary.stat().st_size == 0:
            raise OSError(f"writing {target} produced an empty file (is the disk full?); the previous file is unchanged")
        os.chmod(temporary, file_mode(target if target.exists() else None))
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


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Block SIGINT and SIGTERM (main thread, POSIX) while a few renames complete, so an interrupt cannot split them."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _refusal(target: Path) -> str | None:
    """Why ``target`` may not be a report directory (None when it may)."""
    text = str(target)
    if os.path.islink(text.rstrip("/\\") or text):
        return "it is a symbolic link (give the real directory)"
    real = Path(os.path.realpath(target))
    home = Path(os.path.realpath(os.path.expanduser("~")))
    cwd = Path(os.path.realpath(os.getcwd()))
    if real == Path(real.anchor):
        return "it is the root directory"
    if real == home:
        return "it is the home directory"
    if real == cwd or real in cwd.parents:
        return "it is the working directory" if real == cwd else "it contains the working directory"
    if not real.exists():
        return None
    if not real.is_dir():
        return "it exists and is not a directory"
    present = sorted(entry.name for entry in real.iterdir() if not entry.name.startswith(_BUILDING))
    if not present or _manifest(real) is not None:
        return None
    shown = ", ".join(f"{name}/" if (real / name).is_dir() else name for name in present[:8])
    more = f" and {len(present) - 8} more" if len(present) > 8 else ""
    return (f"it is not a dpaudit report directory (no {MANIFEST} written by dpaudit) and holds {shown}{more}; "
            "give a new or empty directory")


def check_report_directory(path: str | Path, patterns: tuple[str, ...], what: str = "report",
                           inputs: dict[str, str | Path] | None = None) -> Path:
    """Raise ConfigError (naming the path and what is in the way) unless ``path`` may be used as dpaudit's
    report directory: not refused by its kind or location, holding no file named like a report file that
    dpaudit did not write, and no input of the run (``inputs``: label -> path) under a report file's name;
    OSError when its parent cannot be created or written."""
    target = Path(path)
    reason = _refusal(target)
    if reason is None and target.is_dir():
        reason = _in_the_way(target, patterns, inputs or {})
    if reason is not None:
        raise ConfigError(f"--{what} {target}: refused: {reason}; nothing was run")
    if target.is_dir():
        _probe_directory(target, what, target)
    else:
        check_writable_directory(target, what)
    return target


def written_by_dpaudit(path: str | Path) -> bool:
    """Whether the regular file at ``path`` holds content dpaudit writes (judged by content, never by name):
    a PNG carrying dpaudit's ``Software`` text chunk; a JUnit document of ``dpaudit check``; a report or
    baseline JSON (an object with ``config`` and an ``audits`` list); dpaudit's Markdown or HTML report."""
    target = Path(path)
    try:
        if not stat.S_ISREG(os.lstat(target).st_mode):
            return False
        with open(target, "rb") as handle:
            head = handle.read(65536)
        if head.startswith(b"\x89PNG\r\n\x1a\n"):
            return _PNG_MARK in head
        text = head.decode("utf-8", "replace").lstrip("\ufeff")
        if text.startswith("<?xml"):
            return '<testsuites name="dpaudit check"' in text[:4096]
        if text.startswith("# dpaudit "):
            return True
        if text.startswith("<!DOCTYPE html>"):
            return "<title>dpaudit " in text[:4096]
        if text.lstrip().startswith("{") and target.stat().st_size <= _JSON_LIMIT:
            document = json.loads(target.read_text(encoding="utf-8"))
            return isinstance(document, dict) and "config" in document and isinstance(document.get("audits"), list)
    except (OSError, ValueError, RecursionError):
        return False
    return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output_file(path: str | Path, what: str, flag: str, inputs: dict[str, str | Path] | None = None,
                      outputs: dict[str, str | Path] | None = None) -> Path:
    """Refuse (ConfigError naming ``flag`` and the path) an output file that is one of the run's ``inputs``
    (label -> path: the config, a baseline being read), the same path as another of its ``outputs`` (flag ->
    path) or an existing file dpaudit did not write (an empty one, as ``mktemp`` leaves, may be replaced); then check that
    it can be written (OSError otherwise)."""
    target = Path(path)
    for label, other in (inputs or {}).items():
        if other is not None and _same_file(target, Path(other)):
            raise ConfigError(f"{flag} {target}: refused: it is {label}; nothing was run (give another file)")
    for other_flag, other in (outputs or {}).items():
        if other is not None and _same_file(target, Path(other)):
            raise ConfigError(f"{flag} {target}: refused: {other_flag} writes the same file; nothing was run")
    if os.path.lexists(target) and not target.is_dir():
        if os.path.islink(target):
            raise ConfigError(f"{flag} {target}: refused: it is a symbolic link; nothing was run (give the real file)")
        if target.stat().st_size > 0 and not written_by_dpaudit(target):  # an empty file (mktemp) holds nothing to lose
            raise ConfigError(f"{flag} {target}: refused: the file exists and dpaudit did not write it; nothing was run "
                              "(move it away or give a new file name)")
    return check_writable_file(target, what)


def _in_the_way(target: Path, patterns: tuple[str, ...], inputs: dict[str, str | Path]) -> str | None:
    """Why a report written into the existing directory ``target`` could replace a file it must not: an input
    of the run, or a file named like a report file whose content dpaudit does not recognise."""
    def report_name(name: str) -> bool:
        return name != MANIFEST and any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)

    for label, other in inputs.items():
        if other is not None and report_name(Path(other).name) and _same_file(Path(other).parent, target):
            return f"it holds {Path(other).name}, {label}, which the report would replace"
    foreign = sorted(entry.name for entry in target.iterdir()
                     if report_name(entry.name) and not entry.is_dir() and not written_by_dpaudit(entry))
    if foreign:
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        return (f"{', '.join(foreign[:5])}{more} there {'is' if len(foreign) == 1 else 'are'} named like report files but "
                "dpaudit did not write them (move them away or choose another directory)")
    return None


def _manifest(directory: Path) -> list[str] | None:
    """The files a previous report in ``directory`` lists, when its manifest was written by dpaudit."""
    try:
        document = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("written_by") != WRITTEN_BY or not isinstance(document.get("files"), list):
        return None
    return [name for name in document["files"] if isinstance(name, str)]


def _owned_files(directory: Path, patterns: tuple[str, ...]) -> set[str]:
    """Names a previous report wrote, validated: plain names (no separator, no ``..``, not hidden) matching
    the report's own file-name patterns, that are regular files (never a directory or a link) whose content
    dpaudit recognises as its own (a forged manifest cannot hand a user's file over)."""
    owned = set()
    for name in _manifest(directory) or []:
        if not name or name != os.path.basename(name) or "/" in name or "\\" in name or name.startswith("."):
            continue
        if name == MANIFEST or not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            continue
        if written_by_dpaudit(directory / name):  # a regular file whose content is dpaudit's
            owned.add(name)
    return owned


def _write_manifest(directory: Path, names: list[str]) -> None:
    text = json.dumps({"written_by": WRITTEN_BY, "files": sorted(names)}, indent=1) + "\n"
    atomic_write_text(directory / MANIFEST, text)


def _remove_abandoned_builds(target: Path) -> None:
    """Remove build directories a killed dpaudit left in ``target`` (their owner process is gone)."""
    for build in target.glob(f"{_BUILDING}*"):
        try:
            owner = int((build / _OWNER).read_text())
        except (OSError, ValueError):
            continue  # not recognisably ours: left alone
        if owner != os.getpid() and not _alive(owner) and not build.is_symlink():
            shutil.rmtree(build, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


@contextmanager
def report_directory(target: str | Path, patterns: tuple[str, ...]) -> Iterator[Path]:
    """Yield a hidden build directory inside ``target`` (created if new); on success move the built files
    into ``target``, remove the previous report's files this one does not produce, and write the manifest.
    On failure or interrupt ``target`` keeps the previous report whole. Refuses (ConfigError) a target that
    is not dpaudit's, and a built file whose name a user's file already has."""
    target = check_report_directory(target, patterns)
    created = not target.exists()
    if created:
        target.mkdir(parents=True)  # 0777 & ~umask
    _remove_abandoned_builds(target)
    build = Path(tempfile.mkdtemp(prefix=_BUILDING, dir=target))
    (build / _OWNER).write_text(f"{os.getpid()}\n")
    try:
        yield build
        produced = sorted(p.name for p in build.iterdir() if p.is_file() and p.name != MANIFEST and not p.name.startswith("."))
        owned = _owned_files(target, patterns)
        foreign = [name for name in produced if os.path.lexists(target / name) and name not in owned]
        if foreign:
            raise ConfigError(f"--report {target}: refused: {', '.join(foreign)} already exist(s) there and dpaudit did not "
                              "write them; the report was not written (move them away or choose another directory)")
        with _interrupts_deferred():
            _write_manifest(target, sorted(owned | set(produced)))  # a kill between the moves still knows every file
            for name in produced:
                os.chmod(build / name, file_mode(target / name if name in owned else None))
                os.replace(build / name, target / name)
            for name in sorted(owned - set(produced)):
                (target / name).unlink(missing_ok=True)
            _write_manifest(target, produced)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        if created:
            try:
                target.rmdir()  # only when still empty
            except OSError:
                pass
        raise
    shutil.rmtree(build, ignore_errors=True)
