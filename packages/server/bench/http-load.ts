import net from 'node:net';

/**
 * A closed-loop HTTP/1.1 load generator over plain sockets: each connection sends one request, waits for its
 * whole answer, and sends the next, until the run's time is up. It costs the machine as little as a generator in
 * Node can: a request goes out as one prepared buffer, and an answer is read as far as its status line, its
 * Content-Length (or chunked framing) and, for a non-2xx only, its body. On the 2-core machine the generator shares
 * the cores with the server it drives (and with PostgreSQL), so whatever it spends a request is taken from what it
 * measures (docs/performance.md, "Method").
 */

export interface HttpLoadOptions<C> {
  host: string;
  port: number;
  connections: number;
  /** The timed run, after the warm-up. */
  seconds: number;
  /**
   * Load before the timed run that nothing is measured of (default 0): the same connections, sending without a
   * pause into the timed run, so that it starts warm and under load instead of from a fresh process's first
   * requests (the JIT compiling the hot paths) and an idle server.
   */
  warmupSeconds?: number;
  /** Called once, when the timed run begins (after the warm-up). */
  onTimed?: () => void;
  /** An answer slower than this counts as a timeout; its connection is closed and opened again. */
  timeoutMs: number;
  /** The next request's bytes, and what onResponse gets back with its answer. */
  next(): { bytes: Buffer; context: C };
  /** Every answer; body only for a status outside 200-299. A request that gets none is never reported. */
  onResponse(status: number, body: string | null, context: C): void;
}

export interface HttpLoadResult {
  /** Seconds from the start of the timed run to its end. */
  duration: number;
  /** Answers received within the timed run. */
  total: number;
  /** Every answer received, the warm-up's and those that came in after the timed run's end included. */
  answered: number;
  /**
   * Answers received in each whole second from the start of the load, the warm-up's first: how the rate moved
   * within the run (a slow first second, the machine's swings).
   */
  answersBySecond: number[];
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** Answers outside 200-299, the warm-up's included (so are errors and timeouts): none is hidden by it. */
  non2xx: number;
  /** Connections that failed (refused, reset, closed mid-answer). */
  errors: number;
  timeouts: number;
}

const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');

/** What the parser knows of the answer being read. */
interface Answer {
  status: number;
  /** Offset of the body in the connection's buffer. */
  bodyStart: number;
  /** Body length, or -1 when chunked. */
  length: number;
  close: boolean;
}

/** The header block's status and framing, or null when it is not all there yet. */
export function parseHead(buf: Buffer): Answer | null {
  const end = buf.indexOf(CRLFCRLF);
  if (end < 0) return null;
  // One lower-cased copy of the head, searched for the three headers that matter: cheaper than splitting it.
  const head = buf.toString('latin1', 0, end + 2).toLowerCase();
  const status = Number(head.slice(9, 12));
  if (!head.startsWith('http/1.') || !Number.isInteger(status))
    throw new Error(`not an HTTP answer: ${head.slice(0, 40)}`);
  const value = (name: string): string | null => {
    const at = head.indexOf(`\r\n${name}:`);
    if (at < 0) return null;
    const from = at + name.length + 3;
    return head.slice(from, head.indexOf('\r\n', from)).trim();
  };
  const chunked = value('transfer-encoding')?.includes('chunked') ?? false;
  const connection = value('connection');
  return {
    status,
    bodyStart: end + 4,
    length: chunked ? -1 : Number(value('content-length') ?? 0),
    close: connection === null ? head.startsWith('http/1.0') : connection === 'close',
  };
}

/** The size of the chunk whose size line runs from `at` to `eol` (extensions after `;` ignored). */
function chunkSize(buf: Buffer, at: number, eol: number): number {
  const size = Number.parseInt(buf.toString('latin1', at, eol).split(';')[0]!, 16);
  if (!Number.isInteger(size)) throw new Error('malformed chunk size');
  return size;
}

/**
 * Where a chunked body ends in buf (the offset after its last CRLF), or -1 when it is not all there yet. Trailers
 * are not expected and not supported.
 */
export function chunkedEnd(buf: Buffer, start: number): number {
  let at = start;
  for (;;) {
    const eol = buf.indexOf('\r\n', at, 'latin1');
    if (eol < 0) return -1;
    const size = chunkSize(buf, at, eol);
    if (size === 0) return eol + 4 <= buf.length ? eol + 4 : -1;
    at = eol + 2 + size + 2;
    if (at > buf.length) return -1;
  }
}

/** The answer's end in buf, or -1 when it is not all there yet. */
export function answerEnd(buf: Buffer, a: Answer): number {
  if (a.length >= 0) return buf.length >= a.bodyStart + a.length ? a.bodyStart + a.length : -1;
  return chunkedEnd(buf, a.bodyStart);
}

/** The body of a chunked answer, its chunks joined (for a failure sample). */
function chunkedBody(buf: Buffer, start: number, end: number): string {
  const parts: Buffer[] = [];
  let at = start;
  while (at < end) {
    const eol = buf.indexOf('\r\n', at, 'latin1');
    const size = chunkSize(buf, at, eol);
    if (size === 0) break;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Latencies kept exactly (a run holds at most some hundreds of thousands), percentiles by sorting once. */
class Latencies {
  private values = new Float64Array(1 << 16);
  private n = 0;
  get count(): number {
    return this.n;
  }
  add(ms: number): void {
    if (this.n === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.n++] = ms;
  }
  summary(): HttpLoadResult['latencyMs'] {
    if (this.n === 0) return { p50: 0, p90: 0, p99: 0, max: 0, mean: 0 };
    const sorted = this.values.slice(0, this.n).sort();
    // The nearest-rank percentile: the smallest value with at least p of the values at or below it.
    const at = (p: number) => sorted[Math.min(this.n - 1, Math.ceil(p * this.n) - 1)]!;
    let sum = 0;
    for (const v of sorted) sum += v;
    const r = (v: number) => Math.round(v * 100) / 100;
    return { p50: r(at(0.5)), p90: r(at(0.9)), p99: r(at(0.99)), max: r(sorted[this.n - 1]!), mean: r(sum / this.n) };
  }
}

export async function runHttpLoad<C>(o: HttpLoadOptions<C>): Promise<HttpLoadResult> {
  const latencies = new Latencies();
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  let answered = 0;
  const bySecond: number[] = [];
  const started = performance.now();
  const timedFrom = started + (o.warmupSeconds ?? 0) * 1000;
  const endAt = timedFrom + o.seconds * 1000;
  let live = 0;
  const sockets = new Set<net.Socket>();
  // One sweep for every connection's timeout: a timer a request would cost the generator more than the answer.
  const overdue = new Set<(now: number) => void>();
  let stopped = false;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });

  function connection(): void {
    live++;
    const socket = net.connect({ host: o.host, port: o.port, noDelay: true });
    sockets.add(socket);
    let buf: Buffer = Buffer.alloc(0);
    let answer: Answer | null = null;
    let inFlight: { context: C; sentAt: number } | null = null;
    let done = false;
    const checkOverdue = (now: number) => {
      if (inFlight !== null && now - inFlight.sentAt > o.timeoutMs) {
        timeouts++;
        end(true);
      }
    };
    overdue.add(checkOverdue);

    const end = (reopen: boolean) => {
      if (done || stopped) return;
      done = true;
      overdue.delete(checkOverdue);
      socket.destroy();
      sockets.delete(socket);
      inFlight = null;
      live--;
      if (reopen && performance.now() < endAt) connection();
      else if (live === 0) finish();
    };

    const send = () => {
      if (performance.now() >= endAt) {
        end(false);
        return;
      }
      const { bytes, context } = o.next();
      inFlight = { context, sentAt: performance.now() };
      socket.write(bytes);
    };

    socket.on('connect', send);
    socket.on('error', () => {
      errors++;
      end(true);
    });
    socket.on('close', () => {
      if (!done) {
        if (inFlight !== null) errors++;
        end(true);
      }
    });
    socket.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      for (;;) {
        if (inFlight === null) return;
        if (answer === null) answer = parseHead(buf);
        if (answer === null) return;
        const stop = answerEnd(buf, answer);
        if (stop < 0) return;
        const now = performance.now();
        const { context, sentAt } = inFlight;
        inFlight = null;
        const ok = answer.status >= 200 && answer.status <= 299;
        if (!ok) non2xx++;
        let body: string | null = null;
        if (!ok) {
          body =
            answer.length >= 0
              ? buf.toString('utf8', answer.bodyStart, stop)
              : chunkedBody(buf, answer.bodyStart, stop);
        }
        answered++;
        const second = Math.floor((now - started) / 1000);
        bySecond[second] = (bySecond[second] ?? 0) + 1;
        // Only answers within the timed run count, as a fixed-duration run's rate requires.
        if (now >= timedFrom && now <= endAt) latencies.add(now - sentAt);
        o.onResponse(answer.status, body, context);
        const close = answer.close;
        buf = stop === buf.length ? Buffer.alloc(0) : buf.subarray(stop);
        answer = null;
        if (close) {
          end(true);
          return;
        }
        send();
      }
    });
  }

  for (let i = 0; i < o.connections; i++) connection();
  const timed = setTimeout(() => o.onTimed?.(), timedFrom - started);
  const sweep = setInterval(
    () => {
      const now = performance.now();
      for (const check of [...overdue]) check(now);
    },
    Math.min(250, o.timeoutMs),
  );
  const hardStop = setTimeout(() => finish(), endAt - started + o.timeoutMs + 1000);
  await finished;
  clearInterval(sweep);
  clearTimeout(hardStop);
  clearTimeout(timed);
  // Past the hard stop, connections still waiting for an answer are given up.
  stopped = true;
  for (const s of sockets) s.destroy();
  const latencyMs = latencies.summary();
  return {
    duration: Math.max(0, Math.min(performance.now(), endAt) - timedFrom) / 1000,
    total: latencies.count,
    answered,
    // Whole seconds only: the last, cut short by the end of the load, would read as a drop. Counted from the
    // settings: endAt - started, in floating point, can come out a hair under the whole seconds it stands for.
    answersBySecond: Array.from({ length: Math.floor((o.warmupSeconds ?? 0) + o.seconds) }, (_, i) => bySecond[i] ?? 0),
    latencyMs,
    non2xx,
    errors,
    timeouts,
  };
}
