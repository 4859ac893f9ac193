"""The pytest plugin, run in an inner pytest: instances stopped at teardown, stderr in a failure's report."""

from __future__ import annotations

import pytest


def test_factory_instances_are_stopped_and_their_stderr_reported(pytester: pytest.Pytester, echo_server: str) -> None:
    pytester.makepyfile(f"""
        import time

        started = []

        def test_passes(linkcond_factory):
            first = linkcond_factory(profile="3g", upstreams=["{echo_server}"])
            second = linkcond_factory(profile="edge", proxy=True)
            assert first.status()["profile"] == "3g" and second.status()["profile"] == "edge"
            started.extend([first, second])

        def test_all_were_stopped():
            assert [link.exit_status for link in started] == [0, 0]

        def test_fails(linkcond_factory):
            link = linkcond_factory(profile="lte", upstreams=["{echo_server}"])
            for _ in range(600):  # its "profile lte" line, read by the client's stderr thread: at most 60 s
                if "profile lte" in link.stderr:
                    break
                time.sleep(0.1)
            assert False, "the test's own failure"
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*the test's own failure*", "*linkcond 1 stderr*", "*profile lte*"])


def test_an_instance_that_died_during_the_test_fails_its_teardown(pytester: pytest.Pytester, echo_server: str) -> None:
    pytester.makepyfile(f"""
        import os, signal

        def test_kills_it(linkcond_factory):
            link = linkcond_factory(profile="3g", upstreams=["{echo_server}"])
            os.kill(link.pid, signal.SIGKILL)
            link._process.wait(30)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*exited with status -9 during the test*"])
