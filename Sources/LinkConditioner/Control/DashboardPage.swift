/// The dashboard the control endpoint serves at `GET /`: a page, its style sheet and its script, built into the binary.
///
/// The files hold no secret and are served without the token; the script asks for it (or takes it from the URL's
/// `#token=` fragment, which browsers never send, or trades the fragment's one-time `#ticket=` for it) and keeps it
/// in the tab's sessionStorage. Everything the page does
/// goes through the documented API with `Authorization: Bearer`, as same-origin requests. The Content-Security-Policy
/// allows only these files and requests to this origin, no inline script, and no framing by another page.
enum DashboardPage {
    /// Fields every dashboard file is served with.
    static let headers: [(name: String, value: String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
                + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
    ]

    /// The dashboard's files by path: media type and text.
    static let files: [String: (type: String, body: String)] = [
        "/": ("text/html; charset=utf-8", html),
        "/index.html": ("text/html; charset=utf-8", html),
        "/dashboard.css": ("text/css; charset=utf-8", css),
        "/dashboard.js": ("text/javascript; charset=utf-8", script),
    ]

    /// The file at `path`, or nil when the path is not one of the dashboard's.
    static func file(at path: String) -> HTTPResponse? {
        guard let (type, body) = files[path] else { return nil }
        return HTTPResponse(status: 200, contentType: type, body: body, extraHeaders: headers)
    }

    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>linkcond</title>
        <link rel="stylesheet" href="/dashboard.css">
        <script src="/dashboard.js" defer></script>
        </head>
        <body>
        <header>
          <h1>linkcond</h1>
          <span id="link-state" class="state">connecting…</span>
          <span id="version"></span>
        </header>
        <p id="message" role="status"></p>
        <form id="token-form" hidden>
          <label>Control token <input id="token" type="password" autocomplete="off" size="66"></label>
          <button id="token-save" type="submit">Connect</button>
          <small>Run <code>linkcond dashboard</code> for a link that carries it, or read the token file <code>linkcond run</code> names.</small>
        </form>
        <main>
          <section id="profile-section">
            <h2>Profile</h2>
            <p><strong id="profile-name">–</strong> <span id="profile-summary"></span></p>
            <div class="row">
              <select id="profile-picker" aria-label="Built-in profile"></select>
              <button id="apply-profile">Use</button>
            </div>
            <details>
              <summary>Custom profile text</summary>
              <textarea id="profile-text" rows="8" cols="60" spellcheck="false"></textarea>
              <div class="row"><button id="apply-text">Use this text</button></div>
            </details>
          </section>
          <section id="link-section">
            <h2>Link</h2>
            <div class="row">
              <button id="go-online">Online</button>
              <select id="offline-mode" aria-label="Offline mode">
                <option value="refuse">refuse new connections</option>
                <option value="blackhole">blackhole (no signal)</option>
              </select>
              <button id="go-offline">Offline</button>
              <button id="reset">Reset connections</button>
            </div>
            <h2>Scenario</h2>
            <p id="scenario-state">none running</p>
            <div class="row">
              <select id="scenario-picker" aria-label="Built-in scenario"></select>
              <button id="start-scenario">Start</button>
              <button id="stop-scenario">Stop</button>
            </div>
          </section>
          <section id="charts">
            <h2>Throughput <select id="chart-span" aria-label="Time shown"><option value="60">last minute</option><option value="600">last 10 minutes</option></select></h2>
            <p class="legend"><span class="up">▲ uplink <b id="rate-up">–</b></span> <span class="down">▼ downlink <b id="rate-down">–</b></span> <span class="capacity">dashed: the profile's rate <b id="capacity-up">–</b> / <b id="capacity-down">–</b></span></p>
            <canvas id="throughput-chart" class="tall"></canvas>
            <h2>Queue delay</h2>
            <p class="legend"><span class="up">▲ uplink <b id="delay-up">–</b></span> <span class="down">▼ downlink <b id="delay-down">–</b></span></p>
            <canvas id="delay-chart"></canvas>
          </section>
          <section id="connections-section">
            <h2>Connections <small id="connection-count"></small></h2>
            <table id="connections">
              <thead><tr><th>listener</th><th>#</th><th>client</th><th>upstream</th><th>state</th><th class="number">▲ bytes</th><th class="number">▼ bytes</th><th class="number">▲ rate</th><th class="number">▼ rate</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
        </main>
        </body>
        </html>
        """#

    static let css = #"""
        :root { --up: #b5561c; --down: #1f6fb2; --ink: #1d2329; --muted: #66707a; --line: #d8dde2; }
        * { box-sizing: border-box; }
        body { font: 14px/1.4 system-ui, sans-serif; color: var(--ink); margin: 0; background: #f6f7f8; }
        header { display: flex; gap: 1em; align-items: baseline; padding: 0.6em 1.2em; background: #fff; border-bottom: 1px solid var(--line); }
        h1 { font-size: 1.3em; margin: 0; }
        h2 { font-size: 1em; margin: 0.8em 0 0.3em; }
        #version { color: var(--muted); margin-left: auto; }
        .state { font-weight: 600; padding: 0.1em 0.6em; border-radius: 1em; background: #dff3e4; color: #176c2f; }
        .state.offline { background: #fbe0dd; color: #9d2417; }
        main { display: grid; grid-template-columns: minmax(300px, 1fr) minmax(300px, 1fr); gap: 1em; padding: 1em 1.2em; }
        section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 0.2em 1em 1em; }
        #charts, #connections-section { grid-column: 1 / -1; }
        .row { display: flex; gap: 0.5em; align-items: center; flex-wrap: wrap; margin: 0.3em 0; }
        textarea { width: 100%; font: 12px/1.3 ui-monospace, monospace; }
        canvas { display: block; width: 100%; height: 120px; border: 1px solid var(--line); border-radius: 4px; background: #fcfcfd; }
        canvas.tall { height: 170px; }
        .legend { margin: 0.2em 0; }
        .up { color: var(--up); }
        .down { color: var(--down); margin-left: 1.5em; }
        .capacity { color: var(--muted); margin-left: 1.5em; }
        th.number, td.number { text-align: right; }
        h2 select { font-size: 0.85em; margin-left: 0.5em; }
        table { border-collapse: collapse; width: 100%; font: 12px/1.3 ui-monospace, monospace; }
        th, td { text-align: left; padding: 0.2em 0.6em; border-bottom: 1px solid var(--line); }
        #message { margin: 0.5em 1.2em 0; min-height: 1.2em; color: #9d2417; }
        #message.ok { color: var(--muted); }
        #token-form { margin: 0.5em 1.2em; padding: 0.6em; background: #fff7e0; border: 1px solid #e8d48a; border-radius: 6px; }
        """#

    static let script = #"""
        "use strict";
        (() => {
          const $ = (id) => document.getElementById(id);
          // The page keeps as much as the instance's history holds (GET /history, 10 minutes), and shows the span picked.
          const keptSeconds = 600, pollMilliseconds = 500;
          const samples = [];
          const now = () => Date.now() / 1000;
          let token = sessionStorage.getItem("linkcond-token") || "";
          let authorised = false;

          const fragment = new URLSearchParams(location.hash.slice(1));
          if (fragment.get("token")) {
            token = fragment.get("token");
            sessionStorage.setItem("linkcond-token", token);
          }
          history.replaceState(null, "", location.pathname);

          // `linkcond dashboard --open` hands the browser a one-time ticket, traded here for the token once.
          async function redeemTicket() {
            const ticket = fragment.get("ticket");
            if (!ticket) return;
            try {
              const response = await fetch("/dashboard/token", { method: "POST", headers: { "Content-Type": "text/x-linkcond" }, body: ticket, cache: "no-store" });
              if (!response.ok) throw new Error((await response.text()).trim());
              token = (await response.text()).trim();
              sessionStorage.setItem("linkcond-token", token);
            } catch (error) { say(error.message); }
          }

          const say = (text, ok) => { $("message").textContent = text; $("message").className = ok ? "ok" : ""; };

          async function call(method, path, body) {
            const init = { method, headers: { "Authorization": "Bearer " + token }, cache: "no-store" };
            if (body !== undefined) { init.headers["Content-Type"] = "text/x-linkcond"; init.body = body; }
            const response = await fetch(path, init);
            const text = await response.text();
            if (response.status === 401) { askForToken(); throw new Error("the control token is missing or wrong"); }
            if (!response.ok) throw new Error(text.trim() || response.status + " " + response.statusText);
            return text;
          }

          function askForToken() {
            authorised = false;
            $("token-form").hidden = false;
            $("token").focus();
          }

          async function act(method, path, body) {
            try { say(await call(method, path, body), true); await refresh(); } catch (error) { say(error.message); }
          }

          const rate = (bits) => bits >= 1e9 ? (bits / 1e9).toFixed(2) + " Gbit/s" : bits >= 1e6 ? (bits / 1e6).toFixed(2) + " Mbit/s"
            : bits >= 1e3 ? (bits / 1e3).toFixed(1) + " kbit/s" : Math.round(bits) + " bit/s";
          const delay = (seconds) => seconds == null ? "stalled" : seconds >= 1 ? seconds.toFixed(2) + " s" : Math.round(seconds * 1000) + " ms";

          // The profile's rate per direction (the listeners share one profile), null when it sets none.
          function capacity(report, direction) {
            const rates = report.listeners.map((listener) => listener[direction].bandwidthBitsPerSecond).filter((bits) => bits != null);
            return rates.length ? Math.max(...rates) : null;
          }

          function total(report, key) {
            let up = 0, down = 0, upStalled = false, downStalled = false;
            for (const listener of report.listeners) {
              if (key === "queueDelaySeconds") {
                if (listener.uplink[key] == null) upStalled = true; else up = Math.max(up, listener.uplink[key]);
                if (listener.downlink[key] == null) downStalled = true; else down = Math.max(down, listener.downlink[key]);
              } else { up += listener.uplink[key]; down += listener.downlink[key]; }
            }
            return [upStalled ? null : up, downStalled ? null : down];
          }

          function showStatus(report) {
            const offline = report.offline != null;
            $("link-state").textContent = offline ? "offline (" + report.offline + ")" : "online";
            $("link-state").className = offline ? "state offline" : "state";
            $("version").textContent = "linkcond " + report.version;
            $("profile-name").textContent = report.profile || "(inline)";
            $("profile-summary").textContent = report.profileSummary;
            const scenario = report.scenario;
            // As `linkcond status` says it: the step in force and the next as written, and the wait until the next.
            const countdown = (s) => s < 10 ? s.toFixed(1) + " s" : s < 60 ? Math.floor(s) + " s"
              : s < 3600 ? Math.floor(s / 60) + " min " + Math.floor(s % 60) + " s"
              : Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min";
            $("scenario-state").textContent = scenario
              ? [(scenario.name || "(inline)") + ": " + (scenario.currentStep == null ? "starting"
                  : "now \"" + scenario.currentStep + "\"" + (scenario.nextStep == null ? " (the last step)" : "")),
                 scenario.nextStep == null ? null
                  : (scenario.currentStep == null ? "first" : "next") + " \"" + scenario.nextStep + "\" in "
                    + countdown(scenario.secondsToNextStep) + (scenario.nextStepStartsOver ? " (starting over)" : ""),
                 scenario.repetitions ? "repeated " + scenario.repetitions + "×" : null,
                ].filter((part) => part != null).join(", ")
              : "none running";
            const [up, down] = total(report, "bitsPerSecond");
            const [delayUp, delayDown] = total(report, "queueDelaySeconds");
            $("rate-up").textContent = rate(up);
            $("rate-down").textContent = rate(down);
            $("delay-up").textContent = delay(delayUp);
            $("delay-down").textContent = delay(delayDown);
            const capacityUp = capacity(report, "uplink"), capacityDown = capacity(report, "downlink");
            $("capacity-up").textContent = capacityUp == null ? "unlimited" : rate(capacityUp);
            $("capacity-down").textContent = capacityDown == null ? "unlimited" : rate(capacityDown);
            samples.push({ at: now(), up, down, delayUp, delayDown, capacityUp, capacityDown });
            drawCharts();
          }

          function drawCharts() {
            while (samples.length && samples[0].at < samples[samples.length - 1].at - keptSeconds) samples.shift();
            draw($("throughput-chart"), "up", "down", rate, ["capacityUp", "capacityDown"]);
            draw($("delay-chart"), "delayUp", "delayDown", delay, []);
          }

          // The instance's samples from before the page opened, ahead of the page's own.
          async function loadHistory() {
            const history = JSON.parse(await call("GET", "/history"));
            const first = samples.length ? samples[0].at : Infinity;
            const earlier = history.points.filter((point) => point.time < first).map((point) => ({
              at: point.time, up: point.uplinkBitsPerSecond, down: point.downlinkBitsPerSecond,
              delayUp: point.uplinkQueueDelaySeconds ?? null, delayDown: point.downlinkQueueDelaySeconds ?? null,
              capacityUp: point.uplinkCapacityBitsPerSecond ?? null, capacityDown: point.downlinkCapacityBitsPerSecond ?? null,
            }));
            samples.unshift(...earlier);
            $("throughput-chart").dataset.historyPoints = String(earlier.length);
            drawCharts();
          }

          // Lines for `upKey` and `downKey`, and dashed ones for the capacity keys (drawn where known): the scale
          // reaches the capacity, so a rate above the link's reads as the burst it is.
          function draw(canvas, upKey, downKey, format, capacityKeys) {
            const scale = window.devicePixelRatio || 1;
            const width = Math.max(100, canvas.clientWidth), height = Math.max(60, canvas.clientHeight), pad = 4;
            if (canvas.width !== Math.round(width * scale)) { canvas.width = Math.round(width * scale); canvas.height = Math.round(height * scale); }
            const context = canvas.getContext("2d");
            context.setTransform(scale, 0, 0, scale, 0, 0);
            context.clearRect(0, 0, width, height);
            const value = (sample, key) => sample[key] == null ? 0 : sample[key];
            const span = Number($("chart-span").value);
            const newest = samples.length ? samples[samples.length - 1].at : now();
            const shown = samples.filter((sample) => sample.at >= newest - span);
            const highest = (keys) => Math.max(0, ...shown.flatMap((s) => keys.map((key) => value(s, key))));
            const peak = Math.max(1e-9, highest([upKey, downKey, ...capacityKeys]));
            canvas.dataset.points = String(samples.length);
            canvas.dataset.peak = String(highest([upKey, downKey]));
            canvas.dataset.oldest = String(samples.length ? samples[0].at : 0);
            capacityKeys.forEach((key, index) => {
              const latest = samples.length ? samples[samples.length - 1][key] : null;
              canvas.dataset[index ? "capacityDown" : "capacityUp"] = latest == null ? "" : String(latest);
            });
            context.strokeStyle = "#d8dde2";
            context.fillStyle = "#66707a";
            context.font = "11px sans-serif";
            for (let step = 1; step <= 3; step++) {
              const y = height - pad - (height - 2 * pad) * step / 4;
              context.beginPath(); context.moveTo(0, y); context.lineTo(width, y); context.stroke();
              context.fillText(format(peak * step / 4), 6, y - 3);
            }
            if (shown.length < 2) return;
            const x = (sample) => width - (newest - sample.at) / span * width;
            const y = (v) => height - pad - (height - 2 * pad) * v / peak;
            const lines = [[upKey, "#b5561c", []], [downKey, "#1f6fb2", []]];
            capacityKeys.forEach((key, index) => lines.push([key, index ? "#1f6fb2" : "#b5561c", [6, 4]]));
            for (const [key, colour, dashes] of lines) {
              context.strokeStyle = colour;
              context.lineWidth = dashes.length ? 1.5 : 2;
              context.setLineDash(dashes);
              context.beginPath();
              // A capacity line steps where the profile changed, and breaks where the profile sets none.
              let previousY = null;
              for (const sample of shown) {
                if (dashes.length && sample[key] == null) { previousY = null; continue; }
                const pointY = y(value(sample, key));
                if (previousY == null) context.moveTo(x(sample), pointY);
                else { if (dashes.length) context.lineTo(x(sample), previousY); context.lineTo(x(sample), pointY); }
                previousY = pointY;
              }
              context.stroke();
            }
            context.setLineDash([]);
          }

          const bytes = (count) => count == null ? "" : count >= 1e9 ? (count / 1e9).toFixed(2) + " GB"
            : count >= 1e6 ? (count / 1e6).toFixed(2) + " MB" : count >= 1e3 ? (count / 1e3).toFixed(1) + " kB" : count + " B";
          // Each connection's bytes at the previous poll, for its rate: what it delivered between two polls.
          let previousBytes = new Map();

          function showConnections(list) {
            $("connection-count").textContent = "(" + list.total + (list.total > list.connections.length ? ", first " + list.connections.length + " shown" : "") + ")";
            const body = $("connections").tBodies[0];
            const at = now(), seen = new Map();
            const rows = list.connections.map((entry) => {
              const key = entry.listener + " " + entry.id + " " + entry.client + " " + entry.upstream;
              const before = previousBytes.get(key);
              if (entry.bytesUp != null) seen.set(key, { at, up: entry.bytesUp, down: entry.bytesDown });
              const perSecond = (direction) => before == null || entry[direction === "up" ? "bytesUp" : "bytesDown"] == null ? ""
                : rate(Math.max(0, entry[direction === "up" ? "bytesUp" : "bytesDown"] - before[direction]) * 8 / Math.max(at - before.at, 1e-3));
              const row = document.createElement("tr");
              const cells = [
                [entry.listener], [entry.id || ""], [entry.client], [entry.upstream], [entry.state],
                [bytes(entry.bytesUp), "number"], [bytes(entry.bytesDown), "number"], [perSecond("up"), "number"], [perSecond("down"), "number"],
              ];
              for (const [cell, kind] of cells) {
                const td = document.createElement("td");
                td.textContent = String(cell);
                if (kind) td.className = kind;
                row.appendChild(td);
              }
              return row;
            });
            previousBytes = seen;
            body.replaceChildren(...rows);
          }

          async function loadCatalog() {
            const catalog = JSON.parse(await call("GET", "/catalog"));
            const fill = (select, entries, describe) => select.replaceChildren(...entries.map((entry) => {
              const option = document.createElement("option");
              option.value = entry.name;
              option.textContent = describe(entry);
              return option;
            }));
            fill($("profile-picker"), catalog.profiles, (entry) => entry.name + " — " + entry.summary);
            fill($("scenario-picker"), catalog.scenarios, (entry) => entry.name);
            const texts = new Map(catalog.profiles.map((entry) => [entry.name, entry.text]));
            const scenarios = new Map(catalog.scenarios.map((entry) => [entry.name, entry.text]));
            $("profile-picker").addEventListener("change", () => { $("profile-text").value = texts.get($("profile-picker").value) || ""; });
            $("start-scenario").onclick = () => act("PUT", "/scenario?name=" + encodeURIComponent($("scenario-picker").value), scenarios.get($("scenario-picker").value));
          }

          let connectionsDue = 0;
          async function refresh() {
            const report = JSON.parse(await call("GET", "/status"));
            showStatus(report);
            if (!authorised) {
              authorised = true;
              $("token-form").hidden = true;
              const picker = $("profile-picker");
              if ([...picker.options].some((option) => option.value === report.profile)) picker.value = report.profile;
            }
            if (performance.now() >= connectionsDue) {
              connectionsDue = performance.now() + 1000;
              showConnections(JSON.parse(await call("GET", "/connections")));
            }
          }

          async function poll() {
            try { if (token) await refresh(); } catch (error) { if (authorised) say(error.message); }
            setTimeout(poll, pollMilliseconds);
          }

          async function connect() {
            if (!token) { askForToken(); return; }
            try {
              await loadCatalog();
              await refresh();
              await loadHistory();
              $("profile-text").value = await call("GET", "/profile");
              say("", true);
            } catch (error) { say(error.message); }
          }

          $("token-form").addEventListener("submit", (event) => {
            event.preventDefault();
            token = $("token").value.trim();
            sessionStorage.setItem("linkcond-token", token);
            connect();
          });
          $("apply-profile").onclick = () => act("PUT", "/profile", $("profile-picker").value);
          $("apply-text").onclick = () => act("PUT", "/profile", $("profile-text").value);
          $("go-offline").onclick = () => act("POST", "/offline", $("offline-mode").value);
          $("go-online").onclick = () => act("POST", "/online");
          $("reset").onclick = () => act("POST", "/reset");
          $("stop-scenario").onclick = () => act("DELETE", "/scenario");
          $("chart-span").onchange = drawCharts;

          redeemTicket().then(connect).then(poll);
        })();
        """#
}
