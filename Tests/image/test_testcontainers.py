"""Testcontainers for Python starts the linkcond image as a Toxiproxy user's test would start Toxiproxy's, with
only the image name changed: a container with 8474 (the API) and 8666 (a proxy) exposed, readiness from GET
/version, a proxy to the upstream container, a latency toxic that conditions a connection, then stop. Once with
the exposed ports a Toxiproxy test writes, once published on loopback only, as the containers guide recommends.

Set by Tests/image/run.sh: DOCKER_HOST (podman's Docker-compatible socket), TESTCONTAINERS_RYUK_DISABLED,
LINKCOND_IMAGE, LINKCOND_NETWORK (the test's podman network), LINKCOND_UPSTREAM (IP:80), LINKCOND_PAGE,
LINKCOND_TEST_LABEL (a label the run's clean-up removes containers by).
"""
import json
import os
import time
import unittest
import urllib.request

import testcontainers.core.container
from testcontainers.core.container import DockerContainer
from testcontainers.core.waiting_utils import wait_container_is_ready

# Machines like CI's are themselves Docker containers (/.dockerenv), with podman running inside them. Testcontainers
# then takes the containers it starts for siblings reached through a gateway, and reads the gateway from the
# container list's HostConfig, which podman 4.3's Docker-compatible list does not carry. The containers here are
# podman's, published on this machine's own loopback: run.sh sets TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1, and the
# inside-a-container path is turned off. Nothing of this is about linkcond; a test on a plain host needs neither.
testcontainers.core.container.inside_container = lambda: False


def request(url, method="GET", body=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method), timeout=timeout) as response:
        return response.status, response.read()


@wait_container_is_ready(OSError)
def wait_for_version(url):
    status, _ = request(url + "/version", timeout=2)
    assert status == 200


class TestcontainersTests(unittest.TestCase):
    def test_the_call_a_toxiproxy_test_makes_starts_linkcond_and_a_toxic_conditions_a_connection(self):
        # Exactly what a Toxiproxy test writes, but the image name. with_exposed_ports publishes on every
        # interface of the host for the few seconds the test runs; the API asks no token, as Toxiproxy's does.
        self.check_a_toxic_conditions_a_connection(
            DockerContainer(os.environ["LINKCOND_IMAGE"]).with_exposed_ports(8474, 8666))

    def test_linkcond_published_on_loopback_only_serves_the_same(self):
        # What the containers guide recommends instead: the tokenless API published on 127.0.0.1 only.
        self.check_a_toxic_conditions_a_connection(
            DockerContainer(os.environ["LINKCOND_IMAGE"])
            .with_bind_ports(8474, ("127.0.0.1", None))
            .with_bind_ports(8666, ("127.0.0.1", None)))

    def check_a_toxic_conditions_a_connection(self, container):
        key, value = os.environ["LINKCOND_TEST_LABEL"].split("=", 1)
        container = container.with_kwargs(network=os.environ["LINKCOND_NETWORK"], labels={key: value})
        with open(os.environ["LINKCOND_PAGE"], "rb") as page:
            expected = page.read()
        with container:
            host = container.get_container_host_ip()
            api = f"http://{host}:{container.get_exposed_port(8474)}"
            wait_for_version(api)
            status, body = request(api + "/proxies", "POST", {"name": "web", "listen": "0.0.0.0:8666",
                                                              "upstream": os.environ["LINKCOND_UPSTREAM"]})
            self.assertEqual(status, 201, body)
            status, body = request(api + "/proxies/web/toxics", "POST",
                                   {"type": "latency", "attributes": {"latency": 300}})
            self.assertEqual(status, 200, body)
            proxy = f"http://{host}:{container.get_exposed_port(8666)}/page.bin"
            started = time.monotonic()
            _, got = request(proxy, timeout=30)
            elapsed = time.monotonic() - started
            self.assertEqual(got, expected)
            self.assertGreaterEqual(elapsed, 0.3, f"with a 300 ms latency toxic the fetch took {elapsed:.3f} s")
            started_id = container.get_wrapped_container().id
        remaining = [c.id for c in container.get_docker_client().client.containers.list(all=True)]
        self.assertNotIn(started_id, remaining, "the container is still there after the with block")


if __name__ == "__main__":
    unittest.main()
