// Compiled, never run, by clients/test when tsc is installed: index.d.ts must describe this use of the client.
import { ApiError, exec, Linkcond, start, StartError, Status } from "../index.js";

export async function typical(): Promise<void> {
  const link: Linkcond = await start({ profile: "3g", upstreams: ["127.0.0.1:8080"], startTimeout: 10_000 });
  const proxied: Linkcond = await start({ profile: "edge", proxy: true });
  const urls: string[] = [link.addresses[0], link.controlUrl, proxied.proxyUrl, proxied.httpProxyUrl];
  const resolved: string = await link.use("edge");
  await link.set("downlink.delay", "300 ms");
  await link.set({ loss: "2 %", "uplink.delay": 10 });
  await link.offline("blackhole");
  await link.offline();
  await link.online();
  await link.reset();
  await link.scenario("subway");
  await link.stopScenario();
  const status: Status = await link.status();
  const delivered: number = status.listeners[0].downlink.bytesDelivered;
  const offline: "refuse" | "blackhole" | undefined = status.offline;
  const next: string | undefined = status.scenario?.nextStep;
  const startsOver: boolean | undefined = status.scenario?.nextStepStartsOver;
  const rate: number | undefined = status.listeners[0].downlink.bandwidthBitsPerSecond;
  const roundTrip: number | undefined = status.handshake?.roundTripSeconds;
  console.log(next, startsOver, rate, roundTrip);
  try {
    await link.use("no-such-profile");
  } catch (error) {
    if (error instanceof ApiError) {
      const code: number = error.status;
      const said: string = error.endpointMessage;
      console.log(code, said);
    }
    if (error instanceof StartError) {
      const stderr: string = error.stderr;
      const exitStatus: number | null = error.status;
      console.log(stderr, exitStatus);
    }
  }
  const result = await exec("3g", ["sh", "-c", "exit 3"], { forward: [5432], timeout: 60_000 });
  const exitStatus: number = result.status;
  const stopped: number | null = await link.stop();
  console.log(urls, resolved, delivered, offline, exitStatus, stopped, await proxied.stop());
}
