"""Kubernetes Events about ScheduledJobs, posted through kopf's event poster."""

import logging
from typing import cast

import kopf

from punctual.kube import resources

logger = logging.getLogger(__name__)


def warn(body: resources.Body, *, reason: str, message: str) -> None:
    _post(body, type="Warning", reason=reason, message=message)


def normal(body: resources.Body, *, reason: str, message: str) -> None:
    _post(body, type="Normal", reason=reason, message=message)


def _post(body: resources.Body, *, type: str, reason: str, message: str) -> None:
    try:
        kopf.event(cast(kopf.Body, body), type=type, reason=reason, message=message)
    except LookupError:
        # Outside a running operator (tools, unit tests) there is no poster: log instead.
        logger.info("event %s %s: %s", type, reason, message)
