"""A learning rate of zero to the end of a run: the steps it logged there trained nothing.

A schedule that ran out (a job resumed past its last scheduled epoch, a cosine schedule whose length is shorter
than the run) or a warm-up that never started leaves the optimizer at a rate of 0: the loss only wanders about
where it stood, and no verdict on the loss says why. A single 0 at the very end (a linear decay's last step) is
no such stretch: the zeros must be the last ``min_points`` points and ``min_share`` of the points at least.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import Curve

__all__ = ["LearningRateCheck", "check_learning_rate"]


@dataclass(frozen=True)
class LearningRateCheck(ResultMixin):
    """Where the learning rate became 0 for good (None: it did not), over how many of its logged points."""

    tag: str
    zero_from: int | None
    zero_points: int
    points: int
    findings: tuple[Finding, ...]


def check_learning_rate(lr: Curve, min_points: int = 3, min_share: float = 0.1) -> LearningRateCheck | None:
    """The stretch of exact zeros that ends the learning-rate curve ``lr``, with an ``lr_zero`` warning when it
    is long enough (see the module doc); None when ``lr`` has under ``min_points`` finite points."""
    c = lr.collapse_steps().finite_part()
    if len(c) < min_points:
        return None
    nonzero = np.flatnonzero(c.values != 0)
    zeros = len(c) - (int(nonzero[-1]) + 1 if len(nonzero) else 0)
    if zeros < min_points or zeros < min_share * len(c):
        return LearningRateCheck(lr.tag, None, zeros, len(c), ())
    start = int(c.steps[len(c) - zeros])
    where = (f"at all {zeros} logged steps" if zeros == len(c)
             else f"from step {start} to the end ({zeros} of {len(c)} logged points)")
    message = (f"{lr.tag} is 0 {where}: those steps change no weight. A schedule that ran out (the run went on past "
               "its last scheduled epoch or step, or resumed there) or a warm-up that never began; a log that prints "
               "few decimals also shows a tiny rate as 0")
    finding = Finding("lr_zero", Severity.WARNING, message, recommend("lr_zero"), step=start,
                      step_end=int(c.steps[-1]), evidence={"tag": lr.tag, "zero_points": zeros, "points": len(c)})
    return LearningRateCheck(lr.tag, start, zeros, len(c), (finding,))
