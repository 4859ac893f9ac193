// Start and steer linkcond, the network link conditioner, from JavaScript tests.
//
//   import { start } from "linkcond";
//   const link = await start({ profile: "3g", upstreams: ["127.0.0.1:8080"] });
//   const client = new Client(link.addresses[0]);   // "127.0.0.1:PORT", relayed to 127.0.0.1:8080 through 3G
//   await link.offline();                           // the train enters the tunnel
//   await link.stop();
//
// Speaks only linkcond's command line and its control endpoint; needs the linkcond binary on PATH or in
// LINKCOND_BINARY. No dependencies.

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants as fsConstants, statSync } from "node:fs";
import http from "node:http";
import { constants as osConstants } from "node:os";
import path from "node:path";
import readline from "node:readline";

/** The most of linkcond's stderr kept in memory, its last bytes. */
const STDERR_LIMIT = 256 * 1024;

/** Anything this client could not do; the message says what linkcond said, when it said something. */
export class LinkcondError extends Error {
  constructor(message) {
    super(message);
    this.name = "LinkcondError";
  }
}

/** linkcond run did not become ready: `status` its exit status (null: it was stopped), `stderr` what it wrote. */
export class StartError extends LinkcondError {
  constructor(message, status, signal, stderr) {
    super(stderr.trim() ? `${message}; its stderr:\n${stderr.trimEnd()}` : message);
    this.name = "StartError";
    this.status = status;
    this.signal = signal;
    this.stderr = stderr;
  }
}

/** The control endpoint refused a request: `status` is the HTTP status, `endpointMessage` the endpoint's answer. */
export class ApiError extends LinkcondError {
  constructor(method, path, status, message) {
    super(`${method} ${path}: ${status}: ${message}`);
    this.name = "ApiError";
    this.method = method;
    this.path = path;
    this.status = status;
    this.endpointMessage = message;
  }
}

/** The linkcond to run: `binary` if given, else $LINKCOND_BINARY, else linkcond on PATH. */
function findBinary(binary, env) {
  const fromEnv = !binary;
  const chosen = binary || env.LINKCOND_BINARY;
  if (chosen) {
    try {
      accessSync(chosen, fsConstants.X_OK);
      if (statSync(chosen).isDirectory()) throw new Error("a directory");
      return chosen;
    } catch {
      throw new LinkcondError(`linkcond binary "${chosen}" is not an executable file${fromEnv ? " (from LINKCOND_BINARY)" : ""}`);
    }
  }
  for (const directory of (env.PATH || "").split(path.delimiter)) {
    if (!directory) continue;
    const candidate = path.join(directory, "linkcond");
    try {
      accessSync(candidate, fsConstants.X_OK);
      if (!statSync(candidate).isDirectory()) return candidate;
    } catch {
      // not here
    }
  }
  throw new LinkcondError("linkcond is not on PATH; install it, or set LINKCOND_BINARY to the binary's path");
}

/** A random control token (256 bits), handed to linkcond in LINKCOND_CONTROL_TOKEN. */
function newToken() {
  return randomBytes(32).toString("hex");
}

/** Instances not yet stopped: sent SIGTERM when this process exits, so none outlives a test run. */
const running = new Set();
process.on("exit", () => {
  for (const link of running) link._child.kill("SIGTERM");
});

/** Collects a stream's last bytes. */
class Tail {
  constructor(stream) {
    this.chunks = [];
    this.length = 0;
    this.ended = new Promise((resolve) => {
      stream.on("end", resolve);
      stream.on("close", resolve);
      stream.on("error", resolve);
    });
    stream.on("data", (chunk) => {
      this.chunks.push(chunk);
      this.length += chunk.length;
      while (this.length - this.chunks[0].length >= STDERR_LIMIT) this.length -= this.chunks.shift().length;
    });
  }

  get text() {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - STDERR_LIMIT)).toString("utf8");
  }
}

function bounded(promise, milliseconds) {
  let timer;
  return Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, milliseconds)))]).finally(() =>
    clearTimeout(timer),
  );
}

/**
 * Starts linkcond run and resolves once it has printed its "ready control" line. A linkcond that exits first, or
 * prints no such line within `startTimeout` ms, rejects with a StartError carrying its stderr and exit status.
 */
export async function start(options = {}) {
  const {
    profile = "none",
    upstreams = [],
    proxy = false,
    scenario,
    args = [],
    binary,
    env = process.env,
    startTimeout = 30_000,
    stopTimeout = 10_000,
    requestTimeout = 30_000,
  } = options;
  if (typeof upstreams === "string") throw new TypeError('upstreams is a list of "HOST:PORT" strings, not one string');
  if (upstreams.length === 0 && !proxy) throw new TypeError('start needs upstreams: ["HOST:PORT", …], proxy: true, or both');
  const command = [findBinary(binary, env), "run", "--profile", profile, "--control", "127.0.0.1:0"];
  for (const upstream of upstreams) command.push("--listen", "127.0.0.1:0", "--upstream", upstream);
  if (proxy) command.push("--proxy", "127.0.0.1:0");
  if (scenario !== undefined) command.push("--scenario", scenario);
  command.push(...args);
  const token = newToken();
  const child = spawn(command[0], command.slice(1), {
    env: { ...env, LINKCOND_CONTROL_TOKEN: token },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const link = new Linkcond(child, command, token, { stopTimeout, requestTimeout });
  await link._readReadyLines(startTimeout, upstreams.length, proxy);
  running.add(link);
  child.unref();
  child.stdout.unref?.();
  child.stderr.unref?.();
  return link;
}

/** One running linkcond run process; made by start(). */
export class Linkcond {
  constructor(child, command, token, { stopTimeout, requestTimeout }) {
    this._child = child;
    this.command = command;
    this.token = token;
    this.ready = [];
    this.addresses = [];
    this._proxy = null;
    this.controlUrl = null;
    this.stopTimeout = stopTimeout;
    this.requestTimeout = requestTimeout;
    this._stderr = new Tail(child.stderr);
    this._stopped = false;
    this._killed = false;
    this._exit = new Promise((resolve) => {
      child.on("exit", (code, signal) => resolve({ code, signal }));
      child.on("error", (error) => {
        this._spawnError = error;
        resolve({ code: null, signal: null });
      });
    });
    this._exit.then((exit) => (this._exitState = exit));
  }

  async _readReadyLines(timeout, tcp, proxy) {
    const described = `linkcond run (${this.command.slice(1).join(" ")})`;
    const lines = readline.createInterface({ input: this._child.stdout, crlfDelay: Infinity });
    let timer;
    const outcome = await new Promise((resolve) => {
      timer = setTimeout(() => resolve({ kind: "timeout" }), timeout);
      lines.on("line", (line) => {
        const words = line.trim().split(/\s+/);
        if (words.length < 3 || words[0] !== "ready") return;
        this.ready.push(words);
        if (words[1] === "tcp") this.addresses.push(words[2]);
        else if (words[1] === "proxy") this._proxy = words[2];
        else if (words[1] === "control") resolve({ kind: "ready", url: words[2] });
      });
      lines.on("close", () => resolve({ kind: "closed" }));
      this._exit.then(() => setImmediate(() => resolve({ kind: "closed" })));
    });
    clearTimeout(timer);
    if (outcome.kind === "ready") {
      if (this.addresses.length < tcp || (proxy && this._proxy === null)) {
        await this._kill();
        throw new StartError(`${described} said ready without every listener: ${JSON.stringify(this.ready)}`, null, null, await this._stderrAfterExit());
      }
      this.controlUrl = outcome.url;
      const parsed = new URL(outcome.url);
      this._host = parsed.hostname;
      this._port = Number(parsed.port);
      return;
    }
    if (outcome.kind === "timeout") {
      await this._kill();
      throw new StartError(`${described} printed no "ready control" line within ${timeout} ms and was stopped`, null, null, await this._stderrAfterExit());
    }
    const exit = await bounded(this._exit, 5_000);
    if (this._spawnError) throw new StartError(`${described} could not be started: ${this._spawnError.message}`, null, null, "");
    const stderr = await this._stderrAfterExit();
    const how = exit?.signal ? `was ended by ${exit.signal}` : `exited with status ${exit?.code}`;
    throw new StartError(`${described} ${how} before it was ready`, exit?.code ?? null, exit?.signal ?? null, stderr);
  }

  async _stderrAfterExit() {
    if (this._exitState) await bounded(this._stderr.ended, 5_000);
    return this._stderr.text;
  }

  async _kill() {
    if (!this._exitState) {
      this._killed = true;
      this._child.kill("SIGKILL");
    }
    await bounded(this._exit, this.stopTimeout);
  }

  /**
   * Sends SIGTERM and waits up to `stopTimeout` ms, then SIGKILL; resolves to the exit status (0 after a clean
   * stop; null with `exitSignal` set when a signal ended it). Calling it again resolves to the same.
   */
  async stop() {
    this._stopped = true;
    if (!this._exitState) {
      this._child.kill("SIGTERM");
      const exited = await bounded(this._exit, this.stopTimeout);
      if (!exited) await this._kill();
    }
    await bounded(this._stderr.ended, 5_000);
    running.delete(this);
    return this._exitState?.code ?? null;
  }

  /** Whether this client had to SIGKILL linkcond. */
  get killed() {
    return this._killed;
  }

  /** linkcond's exit status once it has exited (null before, or when a signal ended it). */
  get exitStatus() {
    return this._exitState?.code ?? null;
  }

  /** The signal that ended linkcond, if one did. */
  get exitSignal() {
    return this._exitState?.signal ?? null;
  }

  get pid() {
    return this._child.pid;
  }

  /** What linkcond has written to stderr so far (its last 256 KiB). */
  get stderr() {
    return this._stderr.text;
  }

  /** The SOCKS5 proxy, names resolved by linkcond: socks5h://HOST:PORT (for ALL_PROXY). */
  get proxyUrl() {
    return `socks5h://${this._proxyAddress()}`;
  }

  /** The same proxy spoken as HTTP: http://HOST:PORT (for http_proxy and https_proxy). */
  get httpProxyUrl() {
    return `http://${this._proxyAddress()}`;
  }

  _proxyAddress() {
    if (this._proxy === null) throw new LinkcondError("this linkcond runs no proxy; start it with proxy: true");
    return this._proxy;
  }

  /** Sends one control request; resolves to the answer's text, rejects with ApiError for any status but 200. */
  request(method, path, body = "") {
    const payload = Buffer.from(body, "utf8");
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          host: this._host,
          port: this._port,
          method,
          path,
          agent: false,
          timeout: this.requestTimeout,
          headers: {
            Authorization: `Bearer ${this.token}`,
            "Content-Type": "text/x-linkcond",
            "Content-Length": payload.length,
          },
        },
        (response) => {
          const chunks = [];
          response.on("data", (chunk) => chunks.push(chunk));
          response.on("error", reject);
          response.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            if (response.statusCode === 200) resolve(text);
            else reject(new ApiError(method, path, response.statusCode, text.trim()));
          });
        },
      );
      request.on("timeout", () => request.destroy(new LinkcondError(`${method} ${path}: no answer within ${this.requestTimeout} ms`)));
      request.on("error", (error) => {
        if (error instanceof LinkcondError) return reject(error);
        this._requestFailed(method, path, error).then(reject);
      });
      request.end(payload);
    });
  }

  async _requestFailed(method, path, error) {
    if (this._exitState && this._stopped) {
      return new LinkcondError(`${method} ${path}: this linkcond was stopped (exit status ${this.exitStatus})`);
    }
    if (this._exitState) {
      const how = this.exitSignal ? `was ended by ${this.exitSignal}` : `has exited with status ${this.exitStatus}`;
      return new LinkcondError(`${method} ${path}: linkcond ${how}; its stderr:\n${(await this._stderrAfterExit()).trimEnd()}`);
    }
    return new LinkcondError(`${method} ${path}: could not reach linkcond's control endpoint ${this.controlUrl}: ${error.message}`);
  }

  /** Switches to a built-in profile (by name) or to profile text; stops a scenario. Resolves to the profile. */
  use(profile) {
    return this.request("PUT", "/profile", profile);
  }

  /** Changes settings, all or none: set("downlink.delay", "300 ms") or set({ loss: "2 %", … }). */
  set(keyOrSettings, value) {
    let settings;
    if (typeof keyOrSettings === "string") {
      if (value === undefined) return Promise.reject(new TypeError("set(key, value) needs a value"));
      settings = { [keyOrSettings]: value };
    } else {
      settings = keyOrSettings;
    }
    const entries = Object.entries(settings ?? {});
    if (entries.length === 0) return Promise.reject(new TypeError("set needs at least one setting"));
    for (const [key, item] of entries) {
      if (/[\r\n]/.test(key) || /[\r\n]/.test(String(item))) {
        return Promise.reject(new TypeError(`setting "${key}": a key or value cannot span lines`));
      }
    }
    return this.request("POST", "/settings", entries.map(([key, item]) => `${key} = ${item}\n`).join(""));
  }

  /** Airplane mode: "refuse" (the default: new connections are reset) or "blackhole" (they hang). */
  async offline(mode) {
    await this.request("POST", "/offline", mode ?? "");
  }

  /** Ends airplane mode; stalled connections resume where they were. */
  async online() {
    await this.request("POST", "/online");
  }

  /** Resets every live connection. */
  async reset() {
    await this.request("POST", "/reset");
  }

  /** Plays a shipped scenario (by name) or scenario text ("TIME ACTION" lines naming built-in profiles). */
  async scenario(nameOrText) {
    const name = nameOrText.trim();
    if (name === "" || /\s/.test(name)) {
      await this.request("PUT", "/scenario", nameOrText);
      return;
    }
    // The endpoint takes scenario text only: a shipped scenario's text comes from the catalog.
    const catalog = JSON.parse(await this.request("GET", "/catalog"));
    const scenarios = catalog.scenarios ?? [];
    const found = scenarios.find((entry) => entry.name === name);
    if (!found) {
      const names = scenarios.map((entry) => entry.name).join(", ");
      throw new LinkcondError(`no shipped scenario "${name}"; shipped: ${names}; or pass scenario text ("TIME ACTION" lines)`);
    }
    await this.request("PUT", `/scenario?name=${encodeURIComponent(name)}`, found.text);
  }

  /** Stops the scenario that is playing, if any. */
  async stopScenario() {
    await this.request("DELETE", "/scenario");
  }

  /** GET /status: version, profile, offline state, scenario, and per listener its counters. */
  async status() {
    return JSON.parse(await this.request("GET", "/status"));
  }

  /** The current profile, fully resolved, in the profile file format. */
  profile() {
    return this.request("GET", "/profile");
  }
}

if (Symbol.asyncDispose) {
  Linkcond.prototype[Symbol.asyncDispose] = function () {
    return this.stop();
  };
}

/**
 * Runs `argv` under `linkcond exec --profile PROFILE` and resolves to { status, stdout, stderr } once it ends.
 * `status` is the program's (128+N when signal N ended it); stderr also carries linkcond's own lines.
 */
export function exec(profile, argv, options = {}) {
  const { forward = [], mode, scenario, args = [], input, timeout, binary, env = process.env } = options;
  if (!Array.isArray(argv) || argv.length === 0) return Promise.reject(new TypeError("exec needs a program to run, as a list"));
  let command;
  try {
    command = [findBinary(binary, env), "exec", "--profile", profile];
  } catch (error) {
    return Promise.reject(error);
  }
  if (forward.length > 0) command.push("--forward", forward.join(","));
  if (mode !== undefined) command.push("--mode", mode);
  if (scenario !== undefined) command.push("--scenario", scenario);
  command.push(...args, "--", ...argv);
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], command.slice(1), {
      env: { ...env, LINKCOND_CONTROL_TOKEN: newToken() },
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    const stdout = [];
    const stderr = [];
    child.stdout.on("data", (chunk) => stdout.push(chunk));
    child.stderr.on("data", (chunk) => stderr.push(chunk));
    if (input !== undefined) child.stdin.end(input);
    let timedOut = false;
    let killer;
    const timer =
      timeout === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill("SIGTERM");
            killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
          }, timeout);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(new LinkcondError(`linkcond exec could not be started: ${error.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      clearTimeout(killer);
      const err = Buffer.concat(stderr).toString("utf8");
      if (timedOut) {
        reject(new LinkcondError(`linkcond exec ${argv.join(" ")} did not end within ${timeout} ms and was stopped; its stderr:\n${err.trimEnd()}`));
        return;
      }
      const status = code ?? 128 + (osConstants.signals[signal] ?? 0);
      resolve({ status, stdout: Buffer.concat(stdout).toString("utf8"), stderr: err });
    });
  });
}
