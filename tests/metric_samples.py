"""Reading a metric's value back from a registry, in tests."""

import prometheus_client


def sample(registry: prometheus_client.CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)
