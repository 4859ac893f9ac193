"""Toxiproxy's Python client (toxiproxy-python) drives the linkcond image through a published loopback port, as
it would drive Toxiproxy's image: a proxy to an upstream container on the test's podman network, a latency
toxic, disable/enable, reset.

Set by Tests/image/run.sh: LINKCOND_API (127.0.0.1:PORT, the container's 8474), LINKCOND_PROXY (127.0.0.1:PORT,
the container's 8666), LINKCOND_UPSTREAM (IP:80 of the upstream container), LINKCOND_PAGE (the file the
upstream serves as /page.bin). Timing is asserted as "never early" only: a busy machine makes things late.
"""
import os
import time
import unittest
import urllib.error
import urllib.request

import toxiproxy


def fetch(address, timeout=30):
    """GET /page.bin through `address`; returns (body, seconds)."""
    started = time.monotonic()
    with urllib.request.urlopen(f"http://{address}/page.bin", timeout=timeout) as response:
        body = response.read()
    return body, time.monotonic() - started


class ToxiproxyImageTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        host, port = os.environ["LINKCOND_API"].rsplit(":", 1)
        cls.server = toxiproxy.Toxiproxy()
        cls.server.update_api_consumer(host, int(port))
        cls.proxy_address = os.environ["LINKCOND_PROXY"]
        with open(os.environ["LINKCOND_PAGE"], "rb") as page:
            cls.page = page.read()

    def setUp(self):
        self.server.destroy_all()
        # Listens on every interface of the container, as Testcontainers' modules ask, so the published port reaches it.
        self.proxy = self.server.create(upstream=os.environ["LINKCOND_UPSTREAM"], name="web", listen="0.0.0.0:8666")

    def tearDown(self):
        self.server.destroy_all()

    def test_the_api_answers_as_toxiproxy_does(self):
        self.assertTrue(self.server.running())
        self.assertIn(b'"version"', self.server.version())
        self.assertEqual(self.server.get_proxy("web").upstream, os.environ["LINKCOND_UPSTREAM"])

    def test_a_proxy_reaches_the_upstream_container(self):
        body, _ = fetch(self.proxy_address)
        self.assertEqual(body, self.page)

    def test_a_latency_toxic_delays_the_answer_by_at_least_its_latency(self):
        _, plain = fetch(self.proxy_address)
        self.proxy.add_toxic(type="latency", stream="downstream", attributes={"latency": 400})
        body, delayed = fetch(self.proxy_address)
        self.assertEqual(body, self.page)
        self.assertGreaterEqual(delayed, 0.4, f"with a 400 ms latency toxic the fetch took {delayed:.3f} s (without: {plain:.3f} s)")
        self.assertEqual(list(self.proxy.toxics()), ["latency_downstream"])

    def test_disable_refuses_connections_and_enable_restores_them(self):
        self.proxy.disable()
        with self.assertRaises((urllib.error.URLError, ConnectionError, OSError)):
            fetch(self.proxy_address, timeout=5)
        self.proxy.enable()
        deadline = time.monotonic() + 10
        while True:
            try:
                body, _ = fetch(self.proxy_address)
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.assertEqual(body, self.page)

    def test_reset_removes_toxics_and_enables_proxies(self):
        self.proxy.add_toxic(type="latency", attributes={"latency": 60_000})
        self.proxy.disable()
        self.server.reset()
        proxy = self.server.get_proxy("web")
        self.assertTrue(proxy.enabled)
        self.assertEqual(proxy.toxics(), {})
        body, _ = fetch(self.proxy_address)
        self.assertEqual(body, self.page)


if __name__ == "__main__":
    unittest.main()
