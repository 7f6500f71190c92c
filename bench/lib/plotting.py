"""Plots, when matplotlib is there (``uv run --with matplotlib ...``): it is no dependency of the
project, so a benchmark without it prints its tables and says it drew nothing."""

from types import ModuleType


def pyplot() -> ModuleType | None:
    """``matplotlib.pyplot`` drawing to files only (no display); ``None`` without matplotlib."""
    try:
        import matplotlib  # noqa: PLC0415 (optional)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return None
    return plt
