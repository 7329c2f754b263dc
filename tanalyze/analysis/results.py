"""Building blocks shared by every analyzer result: JSON-ready dicts and findings.

Results are frozen dataclasses. ``to_dict`` turns any of them into plain
JSON-serialisable Python (numpy scalars to Python numbers, non-finite floats to
``None`` with the original kept as a string where it matters, tuples to lists).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import numpy as np

__all__ = ["Severity", "Finding", "to_jsonable", "ResultMixin"]


class Severity(enum.StrEnum):
    """How much a finding matters: ``info`` < ``warning`` < ``error``."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


def to_jsonable(value: Any) -> Any:
    """Plain JSON-serialisable Python for results, evidence and findings.

    Non-finite floats become the strings ``"nan"``, ``"inf"``, ``"-inf"``: they are
    evidence (a loss that went NaN) and JSON has no literal for them.
    """
    if is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict"):
            return value.to_dict()
        return {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isnan(number):
            return "nan"
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        return number
    if value is None or isinstance(value, str):
        return value
    return str(value)


class ResultMixin:
    """Gives a frozen dataclass ``to_dict()`` (JSON-ready) through :func:`to_jsonable`."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: to_jsonable(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class Finding(ResultMixin):
    """One thing worth telling the user about a run, with the numbers and what to do.

    ``code`` is stable and machine-readable (e.g. ``"overfitting"``,
    ``"grad_explosion"``); ``step``/``step_end`` locate it; ``message`` carries the
    numbers; ``recommendation`` comes from the table of known causes.
    """

    code: str
    severity: Severity
    message: str
    recommendation: str
    step: int | None = None
    step_end: int | None = None
    evidence: dict[str, Any] | None = None
