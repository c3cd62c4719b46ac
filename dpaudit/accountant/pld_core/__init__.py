"""The PLD core: grid PLDs (construction, FFT composition, read-outs), the discretisation of base pairs from
tails or atoms, pairs from privacy profiles, and the subsampled pair of a composed PLD.

Below the event families (:mod:`..families`), which give each mechanism's tails, atoms or profile, and
knows nothing of events: modules :mod:`.grid`, :mod:`.base_pairs`, :mod:`.atoms`, :mod:`.profiles`,
:mod:`.subsampling`.
"""
