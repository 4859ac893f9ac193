"""The pytest plugin: a ``linkcond_factory`` fixture, registered through the ``pytest11`` entry point.

    def test_checkout_survives_edge(linkcond_factory, shop_server):
        link = linkcond_factory(profile="edge", upstreams=[shop_server.address])
        ...

Every instance the factory started is stopped at the test's teardown. When the test fails, each instance's
stderr is added to the report as a section ("linkcond 1 stderr", ...).
"""

from __future__ import annotations

from typing import Any, Callable, Generator, List

import pytest

from ._instance import Linkcond

_instances_key = pytest.StashKey[List[Linkcond]]()


@pytest.fixture
def linkcond_factory(request: pytest.FixtureRequest) -> Generator[Callable[..., Linkcond], None, None]:
    """Starts ``Linkcond(**options)`` on each call (see ``linkcond.Linkcond``) and stops them all at teardown."""
    instances: List[Linkcond] = []
    request.node.stash[_instances_key] = instances

    def start(*args: Any, **options: Any) -> Linkcond:
        instance = Linkcond(*args, **options)
        instances.append(instance)
        return instance

    yield start
    crashed = []
    for number, instance in enumerate(instances, start=1):
        running = instance.exit_status is None
        status = instance.stop()
        if not running and status != 0:
            crashed.append(f"linkcond {number} ({instance.command[2:]}) exited with status {status} during the test")
    if crashed:
        pytest.fail("; ".join(crashed) + " (its stderr is in the report)", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    instances = item.stash.get(_instances_key, [])
    if report.failed and instances:
        for number, instance in enumerate(instances, start=1):
            report.sections.append((f"linkcond {number} stderr", instance.stderr or "(nothing)"))
