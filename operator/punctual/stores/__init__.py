"""Run stores, one per module, each implementing ``punctual.contracts.protocols.RunStore``."""
