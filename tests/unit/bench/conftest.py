"""The benchmarks' pure helpers (``bench/``) are importable by their module names here."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
