"""Record ids for loaders over iterable-style datasets: the index batches the sampler check needs.

A map-style dataset's loader has a batch sampler that yields the records' indices, which is what
:func:`~dpaudit.training.check_sampler` reads. An iterable-style dataset (``torch.utils.data.IterableDataset``)
has none: the stream decides what is in each batch, and a record's position in the stream is not its
identity (a shuffled or sampled stream puts another record there in the next epoch). So the records must
carry their own id: make the dataset yield it with every record (e.g. ``(record_id, x, y)``, ids in
``[0, n)``), and wrap the loader in :class:`RecordIdBatches`, which iterates the loader (loading the data:
the stream is the sampler) and yields each batch's ids::

    check_sampler(RecordIdBatches(loader), sample_rate=q, records=n)

``ids(batch)`` picks the ids out of a batch (default ``batch[0]``, the first collated field).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..errors import InvalidArgument, InvalidArgumentType

__all__ = ["RecordIdBatches", "ITERABLE_HINT", "is_iterable_style"]

ITERABLE_HINT = ("make the dataset yield each record's id with it (ids in [0, n)) and pass "
                 "dpaudit.training.RecordIdBatches(loader) with records=n")


def _first_field(batch: Any) -> Any:
    try:
        return batch[0]
    except (TypeError, IndexError, KeyError):
        raise InvalidArgumentType("ids", f"a batch of type {type(batch).__name__} has no first field: give ids=, a "
                                         "function returning the batch's record ids") from None


def is_iterable_style(dataset: Any) -> bool:
    """Whether ``dataset`` is a torch iterable-style dataset (no indices; False without torch)."""
    try:
        import torch
    except ImportError:
        return False
    return isinstance(dataset, torch.utils.data.IterableDataset)


class RecordIdBatches:
    """The record ids of every batch ``loader`` yields, one integer array per batch (re-iterable: each
    iteration is one pass over the loader)."""

    def __init__(self, loader: Any, ids: Callable[[Any], Any] = _first_field) -> None:
        if not hasattr(loader, "__iter__"):
            raise InvalidArgumentType("loader", f"loader={loader!r} must be iterable (a DataLoader)")
        if not callable(ids):
            raise InvalidArgumentType("ids", f"ids={ids!r} must be callable: ids(batch) -> the batch's record ids")
        self.loader, self.ids = loader, ids

    def __iter__(self) -> Iterator[np.ndarray]:
        for step, batch in enumerate(self.loader):
            found = self.ids(batch)
            if hasattr(found, "detach"):
                found = found.detach().cpu().numpy()
            array = np.asarray(found)
            if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
                raise InvalidArgument("ids", f"batch {step}'s ids are not a 1-d sequence of integers (dtype "
                                             f"{array.dtype}, shape {array.shape}): does the dataset yield each "
                                             "record's id as the first field (or give ids=)?")
            yield array.astype(np.int64)
