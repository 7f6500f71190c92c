"""Run stores, one per module, each implementing ``punctual.runtime.seams.RunStore``."""
