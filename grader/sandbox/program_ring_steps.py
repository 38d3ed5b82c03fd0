"""Which of a program's ppermutes send something an earlier ppermute brought: measured, not read from the flow.

A ring passes on, at each step after the first, what arrived at the step before (as it came, or with the
device's own part added); direct sends each carry the device's own block. The compiled program's data
flow tells them apart (grader.suite.rings) until the program makes a step's operand depend on the step
before in a way that is worth nothing: ``x + (prev - prev)``, ``x + 0 * prev``, and every other form of
zero nobody lists. So the clean worker measures the dependence, for the program's ppermutes, in the order the program
holds them; one inside a loop is replaced at every step of it (a loop whose steps pick among direct sends
with lax.switch or jnp.where is measured like their unrolled form; a loop's one ppermute alone is never
measured: fewer than two).

For ppermute b, compare what it adds to the answer when nothing is changed (the answer, against the
answer with b's result replaced by zeros) with what it adds when every ppermute before it carried zeros
(the answer with those replaced, against the answer with those and b replaced). If b's operand does not
depend on what the earlier ppermutes brought, b carries the same thing either way, and both differences
are the same: b starts afresh (``fresh``). On a ring the second is another: b passes on what arrived,
and what arrived was zeros. That takes one variant of the program per ppermute after the first and one per prefix of
them (2k - 1 for k ppermutes, run by the probe of grader.sandbox.program_ablation's own variants); a
variant that does not run leaves its ppermute unmeasured, which counts as not fresh (the flow decides).
"""

from __future__ import annotations

import numpy as np

from grader.sandbox.program_ablation import groups, leaves, replacing, same_answer
from grader.sandbox.program_probe import ZEROS
from grader.sandbox.program_sites import Sites

PERMUTE = "stablehlo.collective_permute"


def _difference(a, b) -> list[np.ndarray]:
    return [np.asarray(x, np.float64) - np.asarray(y, np.float64) for x, y in zip(leaves(a), leaves(b))]


def variants(sites: Sites, kept: list[int]) -> dict:
    """The variants the measurement runs ({key: plan}, grader.sandbox.program_ablation.Runs), for the ppermutes
    among ``kept`` (the program's collectives left in its compiled form; ``sites``: what program_sites read of the
    program), in their order: ("upto", i, p) with the
    first i + 1 of them carrying zeros (p the last), ("one", i, p) the i-th alone (after the first); none for fewer
    than two."""
    permutes = [i for i in sorted(kept) if sites.kinds.get(i) == PERMUTE]
    if len(permutes) < 2:
        return {}
    merged = groups(sites, permutes)
    found = {}
    for i, b in enumerate(permutes):
        if i:
            found[("one", i, b)] = replacing(merged[b], ZEROS)
        found[("upto", i, b)] = replacing([m for p in permutes[:i + 1] for m in merged[p]], ZEROS)
    return found


def fresh(planned: dict, answers: dict, baselines: list, idle) -> list[int]:
    """The ppermutes (by index) that send nothing an earlier ppermute brought, from ``answers`` to the variants
    ``planned`` (:func:`variants`; a variant that did not run has none) and the program's own ``baselines``;
    those measured idle are left out (they add nothing either way)."""
    upto = {k[1]: answers.get(k) for k in planned if k[0] == "upto"}
    found = []
    for kind, i, b in planned:
        if kind != "one" or b in idle:
            continue
        before, both, alone = upto.get(i - 1), upto.get(i), answers.get((kind, i, b))
        if before is None or both is None or alone is None:
            continue
        if all(same_answer(_difference(u, w), _difference(a0, a))
               for a0, a, u, w in zip(baselines, alone, before, both)):
            found.append(b)
    return found
