// Type declarations for linkcond's JavaScript client (index.js).

/** How to start `linkcond run`. */
export interface StartOptions {
  /** A built-in profile's name or a profile file's path (default "none"). */
  profile?: string;
  /** HOST:PORT each; linkcond listens on a free loopback port for each, in order (`addresses`). */
  upstreams?: string[];
  /** Also (or only) run the SOCKS5 and HTTP proxy (`proxyUrl`, `httpProxyUrl`). */
  proxy?: boolean;
  /** A shipped scenario's name or a scenario file's path, played from the start. */
  scenario?: string;
  /** More `linkcond run` options, as they would be written on its command line. */
  args?: string[];
  /** The linkcond to run (default: $LINKCOND_BINARY, else linkcond on PATH). */
  binary?: string;
  /** The environment linkcond runs in (default: process.env); the control token is added to it. */
  env?: Record<string, string | undefined>;
  /** Milliseconds to wait for the ready lines (default 30000). */
  startTimeout?: number;
  /** Milliseconds stop() waits after SIGTERM before SIGKILL (default 10000). */
  stopTimeout?: number;
  /** Milliseconds each control request may take (default 30000). */
  requestTimeout?: number;
}

/** Starts `linkcond run`; resolves once it is ready, rejects with a StartError carrying its stderr otherwise. */
export function start(options: StartOptions): Promise<Linkcond>;

/** One direction's counters in /status; downlink carries bytes from the upstream to the client. */
export interface DirectionStatus {
  bytesDelivered: number;
  queuedBytes: number;
  inFlightBytes: number;
  segmentsLost: number;
  acksLost: number;
  handshakeRetransmissions: number;
  datagramsDelivered: number;
  datagramsDropped: number;
  kernelDrops: number;
  faultDrops: number;
  duplicates: number;
  datagramsCorrupted?: number;
  bitsPerSecond: number;
  /** The profile's rate for this direction now, which bitsPerSecond reads against; absent when it sets none. */
  bandwidthBitsPerSecond?: number;
  queueDelaySeconds?: number;
  deliveryLateness?: { writes: number; p50Seconds: number; p99Seconds: number; maxSeconds: number; sumSeconds: number };
  [field: string]: unknown;
}

/** One listener in /status. */
export interface ListenerStatus {
  kind: "tcp" | "udp" | "dns" | "proxy" | string;
  address: string;
  upstream?: string;
  toxiproxy?: string;
  activeConnections: number;
  connectionsAccepted: number;
  connectionsRefused: number;
  connectionsExcluded?: number;
  malformedMessages: number;
  uplink: DirectionStatus;
  downlink: DirectionStatus;
  [field: string]: unknown;
}

/** The answer of GET /status. */
export interface Status {
  version: string;
  profile: string;
  profileSummary: string;
  offline?: "refuse" | "blackhole";
  scenario?: {
    name: string;
    step?: number;
    stepAppliedSeconds?: number;
    elapsedSeconds: number;
    repetitions: number;
    finished: boolean;
    /** The step in force as its author wrote it; absent before the first step. */
    currentStep?: string;
    /** The step due next as written; absent once a scenario that does not repeat applied its last step. */
    nextStep?: string;
    /** Seconds until the next step applies; absent without a next step. */
    secondsToNextStep?: number;
    /** Whether the next step starts the scenario over (`repeat`); absent without a next step. */
    nextStepStartsOver?: boolean;
  };
  listeners: ListenerStatus[];
  mainLoopRealtimePriority?: number;
  /** The TCP handshake a new connection makes under the current conditions. */
  handshake?: {
    /** The uplink's delay plus the downlink's: a SYN's trip and its SYN-ACK's. */
    roundTripSeconds: number;
    /** Whether neither direction can lose a TCP packet. */
    lossless: boolean;
  };
  [field: string]: unknown;
}

/** One running `linkcond run` process, made by start(). */
export class Linkcond {
  private constructor();
  /** The command line linkcond was started with. */
  readonly command: string[];
  /** The control endpoint's token, chosen by this client. */
  readonly token: string;
  /** The words of each "ready" line linkcond printed, in order. */
  readonly ready: string[][];
  /** HOST:PORT of each listener, one per upstream, in the order given. */
  readonly addresses: string[];
  /** The control endpoint, http://127.0.0.1:PORT. */
  readonly controlUrl: string;
  /** socks5h://HOST:PORT; throws a LinkcondError when started without proxy. */
  readonly proxyUrl: string;
  /** http://HOST:PORT; throws a LinkcondError when started without proxy. */
  readonly httpProxyUrl: string;
  readonly pid: number | undefined;
  /** What linkcond has written to stderr so far (its last 256 KiB). */
  readonly stderr: string;
  /** linkcond's exit status once it has exited (null before, or when a signal ended it). */
  readonly exitStatus: number | null;
  readonly exitSignal: string | null;
  /** Whether this client had to SIGKILL linkcond. */
  readonly killed: boolean;
  stopTimeout: number;
  requestTimeout: number;

  /** Switches to a built-in profile (by name) or profile text; stops a scenario. Resolves to the profile. */
  use(profile: string): Promise<string>;
  /** Changes settings, all or none. Resolves to the resulting profile. */
  set(key: string, value: string | number): Promise<string>;
  set(settings: Record<string, string | number>): Promise<string>;
  /** Airplane mode: "refuse" (default) or "blackhole". */
  offline(mode?: "refuse" | "blackhole"): Promise<void>;
  online(): Promise<void>;
  /** Resets every live connection. */
  reset(): Promise<void>;
  /** Plays a shipped scenario (by name) or scenario text. */
  scenario(nameOrText: string): Promise<void>;
  stopScenario(): Promise<void>;
  status(): Promise<Status>;
  /** The current profile, fully resolved, in the profile file format. */
  profile(): Promise<string>;
  /** Any other control request, for instance request("GET", "/metrics"). */
  request(method: string, path: string, body?: string): Promise<string>;
  /** SIGTERM, a bounded wait, then SIGKILL; resolves to the exit status (0 after a clean stop). */
  stop(): Promise<number | null>;
}

/** Options of exec(). */
export interface ExecOptions {
  /** Ports whose 127.0.0.1:PORT inside reaches 127.0.0.1:PORT on the host, through the link. */
  forward?: number[];
  mode?: "auto" | "tun" | "proxy";
  scenario?: string;
  args?: string[];
  /** The program's standard input (default: none). */
  input?: string | Uint8Array;
  /** Milliseconds before linkcond is sent SIGTERM (then SIGKILL) and the promise rejects. */
  timeout?: number;
  binary?: string;
  env?: Record<string, string | undefined>;
}

/** How the program ended: its status (128+N when signal N ended it), stdout, and stderr (with linkcond's lines). */
export interface ExecResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs argv under `linkcond exec --profile PROFILE`. */
export function exec(profile: string, argv: string[], options?: ExecOptions): Promise<ExecResult>;

export class LinkcondError extends Error {}

/** linkcond run did not become ready. */
export class StartError extends LinkcondError {
  /** Its exit status; null when it was stopped by this client or a signal ended it. */
  readonly status: number | null;
  readonly signal: string | null;
  /** Everything it wrote to stderr. */
  readonly stderr: string;
}

/** The control endpoint refused a request. */
export class ApiError extends LinkcondError {
  readonly method: string;
  readonly path: string;
  /** The HTTP status. */
  readonly status: number;
  /** The endpoint's own message. */
  readonly endpointMessage: string;
}
