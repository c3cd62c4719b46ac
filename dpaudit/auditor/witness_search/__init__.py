"""Witness-event search as a pipeline: witness families hand candidates to one selector.

By the Neyman-Pearson lemma the events that best separate two output distributions are likelihood-ratio
threshold sets; each witness family approximates them for one kind of output structure. Layers, each
importing only the ones above it in this list:

- ``candidate`` (the candidate event and its kinds), ``prediction`` (predicted certified bounds from
  selection counts), ``tail_fit``, ``atom_sets``, ``regions`` (the region scan), ``linear_scores``;
- ``batch``: the :class:`~dpaudit.auditor.witness_search.batch.SelectionBatch` and the
  :class:`~dpaudit.auditor.witness_search.batch.WitnessFamily` protocol (batch in, candidates out);
- the families, each one module that knows nothing of the others: ``family_atoms`` (atoms and structural
  features), ``family_magnitude`` (half-lines and intervals of coordinates and a logistic score),
  ``family_products``, ``family_learned`` (learned scores), ``family_tails`` (tails of the streamed budget);
- ``registry``: the ordered list of families;
- ``selector``: runs the registry, ranks the candidates and chooses the events certified (which splits
  the confidence). Certification itself (``auditor.certify``) sits below all of this and knows none of it.

Adding a witness family is one module implementing the protocol and one line in ``registry.FAMILIES``
(``docs/guides/extending.md``).
"""
