"""The data ledger's dataset: the user's map-style dataset behind a wrapper that logs every record read.

``LedgerDataset(dataset)`` is what :func:`~dpaudit.training.witness_run` hands to the train function. It
behaves as the dataset it wraps (``len``, ``dataset[i]``, attribute access), and every ``dataset[i]`` is
appended to a log of pending reads that :class:`~dpaudit.training.ledger.recorder.WitnessHooks` files by
phase: read before ``hooks.attach``, used by a noisy step (the last reads before the per-example
gradients a step clips, as many as it has examples), or read for nothing the claim covers (a second loader,
an evaluation pass, statistics computed on the data). Any other access to the data (``dataset.tensors``,
``dataset.data``: a copy of every record at once) is logged as a bulk read of all records, since the ledger
cannot see what is done with a copy.

Opacus' ``DPDataLoader`` reads ``dataset[0]`` when it is built, for the shapes and dtypes of an empty
batch; :func:`shape_probes_unlogged` keeps those reads (which use no value) out of the log.

Reads inside DataLoader worker processes (``num_workers > 0``) happen in a copy of the wrapper, so which
records they were never reaches the log; they are counted in a counter shared with those processes
(:meth:`LedgerDataset.worker_reads`), so that the checks can say what the ledger could not see instead of
passing or flagging on reads it never saw.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import InvalidArgument, InvalidArgumentType
from ..record_ids import is_iterable_style

__all__ = ["LedgerDataset", "wrap_dataset", "shape_probes_unlogged"]

# the wrapper's own attributes (never looked up on the wrapped dataset)
_OWN = frozenset({"_inner", "_size", "pending", "bulk", "quiet", "shape_probes", "_worker_counter", "_fetch_many"})
# attributes of torch / torchvision datasets that hand out every record at once
_BULK = frozenset({"tensors", "data", "targets", "datasets", "dataset", "samples", "imgs", "labels"})


def _dataset_base() -> type:
    try:
        import torch
    except ImportError:  # pragma: no cover - witness_run needs torch; the wrapper itself does not
        return object
    return torch.utils.data.Dataset


def _worker_info_reader() -> Any:
    try:
        from torch.utils.data import get_worker_info
    except ImportError:  # pragma: no cover
        return lambda: None
    return get_worker_info


_worker_info = _worker_info_reader()  # not None inside a DataLoader worker process


def _shared_counter() -> Any:
    """A counter in shared memory, seen by the DataLoader worker processes (forked or spawned) and this one."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return None
    return torch.zeros(1, dtype=torch.int64).share_memory_()


class LedgerDataset(_dataset_base()):  # type: ignore[misc]
    """A map-style dataset that logs every record read (see the module docstring)."""

    def __init__(self, dataset: Any) -> None:
        object.__setattr__(self, "_inner", dataset)
        object.__setattr__(self, "_size", len(dataset))
        object.__setattr__(self, "pending", [])  # record indices read and not yet filed by the recorder
        object.__setattr__(self, "bulk", [])  # attribute names read in bulk, in order
        object.__setattr__(self, "quiet", 0)  # > 0: inside Opacus' shape probe, reads are not logged
        object.__setattr__(self, "shape_probes", 0)
        object.__setattr__(self, "_worker_counter", _shared_counter())  # reads made in DataLoader worker processes
        object.__setattr__(self, "_fetch_many", getattr(dataset, "__getitems__", None))  # the dataset's own batch read

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        item = self._inner[index]
        try:
            position = int(index)
        except TypeError:
            raise InvalidArgumentType("dataset", f"the ledger's dataset was indexed with {type(index).__name__} "
                                                 "(a slice or a list): index it one record at a time (a DataLoader "
                                                 "does), so that every read is logged") from None
        if not -self._size <= position < self._size:
            raise IndexError(f"record {position} outside a dataset of {self._size} records")
        if self.quiet:
            object.__setattr__(self, "shape_probes", self.shape_probes + 1)
        elif _worker_info() is not None:
            self._count_worker_reads(1)
        else:
            self.pending.append(position % self._size)
        return item

    def __getitems__(self, indices: Any) -> list[Any]:
        """A batch of records (what a DataLoader's fetcher asks for), logged in one go."""
        try:
            positions = list(map(operator.index, indices))
        except TypeError:
            raise InvalidArgumentType("dataset", "the ledger's dataset was asked for a batch that is not a sequence of "
                                                 "integer record indices: index it one record at a time or with a list "
                                                 "of integers (a DataLoader does), so that every read is logged") from None
        if positions and (min(positions) < 0 or max(positions) >= self._size):
            bad = [i for i in positions if not -self._size <= i < self._size]
            if bad:
                raise IndexError(f"record {bad[0]} outside a dataset of {self._size} records")
            positions = [i % self._size for i in positions]
        items = self._fetch_many(indices) if self._fetch_many else [self._inner[i] for i in indices]
        if self.quiet:
            object.__setattr__(self, "shape_probes", self.shape_probes + len(positions))
        elif _worker_info() is not None:
            self._count_worker_reads(len(positions))
        else:
            self.pending.extend(positions)
        return items

    def _count_worker_reads(self, count: int) -> None:
        if self._worker_counter is not None:
            self._worker_counter.add_(count)  # concurrent workers may lose an increment, never turn a count to 0

    def worker_reads(self) -> int:
        """How many records were read in DataLoader worker processes so far (which ones the ledger cannot see)."""
        return 0 if self._worker_counter is None else int(self._worker_counter.item())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in _OWN:
            raise AttributeError(name)
        value = getattr(self._inner, name)
        if name in _BULK:
            self.bulk.append(name)
            self.pending.extend(range(self._size))
        return value

    def take(self) -> list[int]:
        """The pending reads, in order, and an empty log."""
        reads = list(self.pending)
        self.pending.clear()
        return reads


def wrap_dataset(dataset: Any) -> LedgerDataset:
    """``dataset`` in the ledger's wrapper; an iterable-style or length-less dataset is refused."""
    if is_iterable_style(dataset):
        raise InvalidArgumentType("dataset", "dataset is iterable-style: the data ledger logs dataset[i] reads, and a "
                                             "stream has no record indices to log; give a map-style dataset "
                                             "(dataset[i] -> (input, label), with a length)")
    if not hasattr(dataset, "__getitem__"):
        raise InvalidArgumentType("dataset", f"dataset={type(dataset).__name__} must be a map-style dataset "
                                             "(dataset[i] -> record, with a length)")
    try:
        size = len(dataset)
    except TypeError:
        raise InvalidArgumentType("dataset", "dataset must have a length (a map-style dataset)") from None
    if size == 0:
        raise InvalidArgument("dataset", "dataset is empty")
    return LedgerDataset(dataset)


@contextmanager
def shape_probes_unlogged(ledger: LedgerDataset) -> Iterator[None]:
    """While active, the reads Opacus' ``DPDataLoader.__init__`` makes of the ledger's dataset, directly or through
    a dataset wrapping it (the shapes and dtypes of ``dataset[0]``, for empty batches), are counted apart, not
    logged as reads."""
    from opacus.data_loader import DPDataLoader

    original = DPDataLoader.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(ledger, "quiet", ledger.quiet + 1)  # the loader may wrap the ledger (augmentation)
        try:
            original(self, *args, **kwargs)
        finally:
            object.__setattr__(ledger, "quiet", ledger.quiet - 1)

    DPDataLoader.__init__ = init
    try:
        yield
    finally:
        DPDataLoader.__init__ = original
