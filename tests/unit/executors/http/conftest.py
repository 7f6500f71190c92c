"""The HTTP target's tests run on both event loops: the operator runs on uvloop (the default),
whose transports are not the standard library's classes, and on asyncio (``--event-loop``)."""

import asyncio
from collections.abc import Mapping

import pytest
import uvloop
from pytest_asyncio.plugin import LoopFactory


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, LoopFactory]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
