"""Fixtures of the unit tests: a metrics registry of the test's own and the ``Metrics`` on it
(read their values with ``metric_samples.sample``)."""

import prometheus_client
import pytest

from punctual import metrics
from punctual.targets import kinds


@pytest.fixture
def registry() -> prometheus_client.CollectorRegistry:
    return prometheus_client.CollectorRegistry()


@pytest.fixture
def meters(registry: prometheus_client.CollectorRegistry) -> metrics.Metrics:
    return metrics.Metrics(registry, target_kinds=kinds.NAMES)
