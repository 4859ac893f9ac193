// The JavaScript client against the real linkcond binary (LINKCOND_BINARY, else linkcond on PATH), on loopback
// only. Nothing here depends on the machine's speed: every wait is for a condition, bounded by a timeout, and the
// only timing assertion is a lower bound (a round trip takes at least the profile's two delays, less a tolerance).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import http from "node:http";
import net from "node:net";
import { chmod, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { ApiError, LinkcondError, StartError, exec, start } from "../index.js";

const TIMEOUT = 120_000;

/** A server on 127.0.0.1 port 0; resolves to "127.0.0.1:PORT". */
function listen(server) {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(`127.0.0.1:${server.address().port}`));
  });
}

const echo = net.createServer((socket) => {
  socket.on("error", () => {}); // the tests reset connections on purpose
  socket.pipe(socket);
});
const page = http.createServer((request, response) => response.end(`page ${request.url}\n`));
let echoAddress;
let pageAddress;

before(async () => {
  echoAddress = await listen(echo);
  pageAddress = await listen(page);
});

after(() => {
  echo.close();
  page.close();
});

/** Connects to "HOST:PORT"; resolves to the socket. */
function connect(address) {
  const [host, port] = [address.slice(0, address.lastIndexOf(":")), Number(address.slice(address.lastIndexOf(":") + 1))];
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port }, () => {
      socket.on("error", () => {}); // receive() reports an ended or failed connection as fewer bytes
      resolve(socket);
    });
    socket.setTimeout(60_000, () => socket.destroy(new Error("no data within 60 s")));
    socket.once("error", reject);
  });
}

/** Reads exactly `count` bytes, or fewer when the connection ends or fails first. */
function receive(socket, count) {
  return new Promise((resolve) => {
    const chunks = [];
    let length = 0;
    const finish = () => resolve(Buffer.concat(chunks));
    socket.on("data", (chunk) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= count) finish();
    });
    socket.on("end", finish);
    socket.on("close", finish);
    socket.on("error", finish);
  });
}

/** GET `url` through an HTTP proxy, as http_proxy makes clients do: the absolute URL sent to the proxy. */
function getThroughProxy(proxyUrl, url) {
  const proxy = new URL(proxyUrl);
  return new Promise((resolve, reject) => {
    const request = http.get({ host: proxy.hostname, port: proxy.port, path: url, agent: false, timeout: 60_000 }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    request.on("error", reject);
  });
}

/** A shell script standing in for linkcond; resolves to its path. */
async function fakeLinkcond(script) {
  const file = path.join(await mkdtemp(path.join(tmpdir(), "fake-linkcond-")), "linkcond");
  await writeFile(file, `#!/bin/sh\n${script}\n`);
  await chmod(file, 0o755);
  return file;
}

async function withLink(options, body) {
  const link = await start(options);
  try {
    await body(link);
  } catch (error) {
    error.message += `\nlinkcond stderr:\n${link.stderr}`;
    throw error;
  } finally {
    await link.stop();
  }
  return link;
}

describe("linkcond client", { timeout: TIMEOUT }, () => {
  it("relays bytes exactly through each address, in order", async () => {
    const payload = randomBytes(24 * 1024);
    const link = await withLink({ profile: "3g", upstreams: [echoAddress, pageAddress] }, async (link) => {
      assert.equal(link.addresses.length, 2);
      assert.deepEqual(link.ready.filter((words) => words[1] === "tcp").map((words) => words[3]), [echoAddress, pageAddress]);
      const socket = await connect(link.addresses[0]);
      socket.write(payload);
      const echoed = await receive(socket, payload.length);
      socket.destroy();
      assert.ok(echoed.equals(payload), "the echoed bytes differ from those sent");
      const response = await fetch(`http://${link.addresses[1]}/second`);
      assert.equal(await response.text(), "page /second\n");
      const status = await link.status();
      assert.ok(status.listeners[0].downlink.bytesDelivered >= payload.length);
    });
    assert.equal(link.exitStatus, 0);
  });

  it("takes at least the profile's delays for a round trip", async () => {
    await withLink({ profile: "3g", upstreams: [echoAddress] }, async (link) => {
      const socket = await connect(link.addresses[0]);
      const started = performance.now();
      socket.write("x");
      assert.equal((await receive(socket, 1)).toString(), "x");
      socket.destroy();
      assert.ok(performance.now() - started >= 200 - 50, "3g: 100 ms each way; 50 ms tolerance");
    });
  });

  it("changes what /status reports with use and set", async () => {
    await withLink({ profile: "3g", upstreams: [echoAddress] }, async (link) => {
      assert.equal((await link.status()).profile, "3g");
      assert.match(await link.use("edge"), /downlink\.delay = 400 ms/);
      assert.equal((await link.status()).profile, "edge");
      await link.set("downlink.delay", "300 ms");
      assert.match((await link.status()).profileSummary, /300 ms\/440 ms delay/);
      await link.set({ loss: "2 %", "uplink.delay": "10 ms" });
      const summary = (await link.status()).profileSummary;
      assert.match(summary, /300 ms\/10 ms delay/);
      assert.match(summary, /2 % loss/);
      assert.match(await link.profile(), /uplink\.delay = 10 ms/);
    });
  });

  it("goes offline and online", async () => {
    await withLink({ profile: "none", upstreams: [echoAddress] }, async (link) => {
      await link.offline();
      assert.equal((await link.status()).offline, "refuse");
      try {
        const socket = await connect(link.addresses[0]);
        socket.write("hello");
        assert.equal((await receive(socket, 5)).length, 0, "a connection made while offline was relayed");
        socket.destroy();
      } catch (error) {
        assert.equal(error.code, "ECONNRESET");
      }
      await link.offline("blackhole");
      assert.equal((await link.status()).offline, "blackhole");
      await link.online();
      assert.equal((await link.status()).offline, undefined);
      const socket = await connect(link.addresses[0]);
      socket.write("hello");
      assert.equal((await receive(socket, 5)).toString(), "hello");
      socket.destroy();
    });
  });

  it("resets live connections", async () => {
    await withLink({ profile: "none", upstreams: [echoAddress] }, async (link) => {
      const socket = await connect(link.addresses[0]);
      socket.write("ping");
      assert.equal((await receive(socket, 4)).toString(), "ping");
      socket.removeAllListeners("data");
      const ended = new Promise((resolve) => socket.once("close", resolve));
      await link.reset();
      await ended;
    });
  });

  it("plays scenarios by name and by text", async () => {
    await withLink({ profile: "3g", upstreams: [echoAddress] }, async (link) => {
      await link.scenario("subway");
      assert.equal((await link.status()).scenario.name, "subway");
      await link.stopScenario();
      assert.equal((await link.status()).scenario, undefined);
      await link.scenario("0s edge\n1h lte\n");
      assert.equal((await link.status()).profile, "edge");
      await assert.rejects(link.scenario("no-such-scenario"), (error) => error instanceof LinkcondError && /subway/.test(error.message));
      await assert.rejects(link.scenario("0s no-such-profile\n"), (error) => error instanceof ApiError && error.status === 400);
    });
  });

  it("gives linkcond's message for a bad profile name", async () => {
    await withLink({ profile: "3g", upstreams: [echoAddress] }, async (link) => {
      await assert.rejects(link.use("no-such-profile"), (error) => {
        assert.ok(error instanceof ApiError);
        assert.equal(error.status, 400);
        assert.equal(error.method, "PUT");
        assert.equal(error.path, "/profile");
        assert.match(error.endpointMessage, /no built-in profile "no-such-profile"/);
        assert.match(error.message, /no built-in profile "no-such-profile"/);
        return true;
      });
      await assert.rejects(link.set("no.such.key", "1"), /unknown key "no.such.key"/);
      assert.equal((await link.status()).profile, "3g");
    });
  });

  it("rejects a failed start with stderr and exit status", async () => {
    await assert.rejects(start({ profile: "3g", upstreams: [echoAddress], args: ["--no-such-option"] }), (error) => {
      assert.ok(error instanceof StartError);
      assert.equal(error.status, 2);
      assert.match(error.stderr, /--no-such-option/);
      assert.match(error.message, /--no-such-option/);
      return true;
    });
    await assert.rejects(start({ profile: "no-such-profile", proxy: true }), /no built-in profile "no-such-profile"/);
    await assert.rejects(start({ profile: "3g", proxy: true, binary: "/nonexistent/linkcond" }), /is not an executable file/);
    await assert.rejects(start({ profile: "3g", proxy: true, env: { PATH: "/nonexistent" } }), /LINKCOND_BINARY/);
    await assert.rejects(start({ profile: "3g" }), TypeError);
  });

  it("reports output that is not ready lines as linkcond's failure, not a parse error", async () => {
    const binary = await fakeLinkcond("echo 'something else'; echo 'ready'; echo 'linkcond: broke' >&2; exit 1");
    await assert.rejects(start({ profile: "3g", proxy: true, binary }), (error) => {
      assert.ok(error instanceof StartError);
      assert.equal(error.status, 1);
      assert.match(error.stderr, /linkcond: broke/);
      return true;
    });
  });

  it("stops a start that never says ready", async () => {
    const binary = await fakeLinkcond("echo 'waiting' >&2; exec sleep 600");
    await assert.rejects(start({ profile: "3g", proxy: true, binary, startTimeout: 1000 }), (error) => {
      assert.ok(error instanceof StartError);
      assert.equal(error.status, null);
      assert.match(error.message, /no "ready control" line within 1000 ms/);
      assert.match(error.stderr, /waiting/);
      return true;
    });
  });

  it("says so when asked after stop", async () => {
    const link = await start({ profile: "3g", upstreams: [echoAddress] });
    assert.equal(await link.stop(), 0);
    assert.equal(await link.stop(), 0);
    await assert.rejects(link.status(), /stopped/);
  });

  it("gives working proxy URLs in proxy mode", async () => {
    await withLink({ profile: "3g", proxy: true }, async (link) => {
      assert.match(link.proxyUrl, /^socks5h:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(link.httpProxyUrl, link.proxyUrl.replace("socks5h://", "http://"));
      assert.match(link.controlUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
      const answer = await getThroughProxy(link.httpProxyUrl, `http://${pageAddress}/through-http-proxy`);
      assert.deepEqual(answer, { status: 200, body: "page /through-http-proxy\n" });
      const proxy = (await link.status()).listeners.filter((listener) => listener.kind === "proxy");
      assert.equal(proxy.length, 1);
      assert.ok(proxy[0].connectionsAccepted >= 1);
    });
    await withLink({ profile: "none", upstreams: [echoAddress] }, async (link) => {
      assert.throws(() => link.proxyUrl, /proxy: true/);
    });
  });

  it("returns the program's status and output from exec", async () => {
    const result = await exec("3g", ["sh", "-c", "echo out; echo err >&2; exit 3"], { timeout: 60_000 });
    assert.equal(result.status, 3);
    assert.equal(result.stdout, "out\n");
    assert.match(result.stderr, /err/);
    assert.equal((await exec("no-such-profile", ["true"], { timeout: 60_000 })).status, 2);
    assert.equal((await exec("none", ["cat"], { input: "piped\n", timeout: 60_000 })).stdout, "piped\n");
  });
});
