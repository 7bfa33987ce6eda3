import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { answerEnd, chunkedEnd, type HttpLoadOptions, parseHead, runHttpLoad } from '../../bench/http-load.ts';
import { generatorOf } from '../../bench/load-job.ts';

const bytes = (s: string) => Buffer.from(s, 'latin1');

describe('the load generator of a bench run', () => {
  it('is the socket generator unless BENCH_GENERATOR asks for autocannon, and nothing else', () => {
    expect(generatorOf({})).toBe('sockets');
    expect(generatorOf({ BENCH_GENERATOR: 'sockets' })).toBe('sockets');
    expect(generatorOf({ BENCH_GENERATOR: 'autocannon' })).toBe('autocannon');
    expect(() => generatorOf({ BENCH_GENERATOR: 'wrk' })).toThrow('BENCH_GENERATOR must be sockets or autocannon');
  });
});

describe('the socket load generator: reading answers', () => {
  it('reads the status and the framing from the head, whatever the case of the header names', () => {
    const head = 'HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-A: b\r\n\r\n';
    const a = parseHead(bytes(`${head}hello`))!;
    expect(a).toEqual({ status: 201, bodyStart: head.length, length: 5, close: false });
    expect(answerEnd(bytes(`${head}hel`), a)).toBe(-1);
    // The next answer's first bytes may follow in the same read.
    expect(answerEnd(bytes(`${head}helloHTTP`), a)).toBe(head.length + 5);

    expect(parseHead(bytes('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n'))).toMatchObject({
      status: 404,
      length: 0,
      close: true,
    });
    expect(parseHead(bytes('HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n'))!.close).toBe(true);
    expect(parseHead(bytes('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\ncontent-length: 0\r\n\r\n'))!.close).toBe(
      false,
    );
    expect(parseHead(bytes('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n'))).toBeNull();
    expect(() => parseHead(bytes('SSH-2.0-OpenSSH\r\n\r\n'))).toThrow('not an HTTP answer');
  });

  it('finds the end of a chunked body only once its last chunk is there', () => {
    const head = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';
    const body = '3\r\nabc\r\na;ext=1\r\n0123456789\r\n0\r\n\r\n';
    const a = parseHead(bytes(head + body))!;
    expect(a.length).toBe(-1);
    expect(chunkedEnd(bytes(head + body), head.length)).toBe(head.length + body.length);
    for (let cut = 1; cut < body.length; cut++) {
      expect(chunkedEnd(bytes(head + body.slice(0, cut)), head.length)).toBe(-1);
    }
    expect(() => chunkedEnd(bytes(`${head}zz\r\n`), head.length)).toThrow('malformed chunk size');
  });
});

describe('the socket load generator against a real server', () => {
  let server: http.Server | null = null;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    server = null;
  });

  async function listen(handler: http.RequestListener): Promise<number> {
    server = http.createServer(handler);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return (server.address() as AddressInfo).port;
  }

  /** A run on one connection whose requests are GET /0, /1, ..., with what a test sets instead. */
  function loadOn(port: number, o: Partial<HttpLoadOptions<number>>) {
    let n = 0;
    return runHttpLoad<number>({
      host: '127.0.0.1',
      port,
      connections: 1,
      seconds: 0.4,
      timeoutMs: 2000,
      next: () => ({ bytes: request(`/${n}`), context: n++ }),
      onResponse: () => {},
      ...o,
    });
  }

  const request = (path: string, body = '') =>
    bytes(
      body === ''
        ? `GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`
        : `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    );

  it('keeps one request in flight a connection, counts every answer, and hands back bodies of failures only', async () => {
    let received = 0;
    let inFlight = 0;
    let mostInFlight = 0;
    const perSocket = new Map<unknown, number>();
    let overlapped = false;
    const port = await listen((req, res) => {
      received++;
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      const open = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, open);
      if (open > 1) overlapped = true;
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        setTimeout(() => {
          inFlight--;
          perSocket.set(req.socket, perSocket.get(req.socket)! - 1);
          const n = Number(req.url!.slice(1));
          if (n % 5 === 0) {
            res.writeHead(422, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ refused: n, echoed: body.length }));
          } else if (n % 5 === 1) {
            // Chunked: two writes before the end.
            res.writeHead(200);
            res.write('part one, ');
            res.end('part two');
          } else if (n % 7 === 0) {
            res.writeHead(200, { connection: 'close', 'content-length': '2' });
            res.end('ok');
          } else {
            res.end('fine');
          }
        }, 2);
      });
    });

    let n = 0;
    const statuses: Record<number, number> = {};
    const failures: string[] = [];
    let chunkedOk = 0;
    const result = await loadOn(port, {
      connections: 4,
      seconds: 0.6,
      next() {
        const i = n++;
        return { bytes: request(`/${i}`, i % 2 === 0 ? '{"a":1}' : ''), context: i };
      },
      onResponse(status, body, i) {
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status === 422) failures.push(`${i} ${body}`);
        else expect(body).toBeNull();
        if (i % 5 === 1) chunkedOk++;
      },
    });

    expect(overlapped).toBe(false);
    expect(mostInFlight).toBeLessThanOrEqual(4);
    const answered = (statuses[200] ?? 0) + (statuses[422] ?? 0);
    expect(answered).toBeGreaterThan(20);
    // Every request the server got was answered and reported, but for at most one a connection cut at the end.
    expect(received - answered).toBeLessThanOrEqual(4);
    expect(result.total).toBeLessThanOrEqual(answered);
    expect(result.total).toBeGreaterThan(0);
    expect(result.non2xx).toBe(statuses[422] ?? 0);
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) {
      const [i, body] = [Number(f.split(' ')[0]), f.slice(f.indexOf(' ') + 1)];
      expect(JSON.parse(body)).toEqual({ refused: i, echoed: i % 2 === 0 ? 7 : 0 });
    }
    expect(chunkedOk).toBeGreaterThan(0);
    expect(result.errors).toBe(0);
    expect(result.timeouts).toBe(0);
    expect(result.latencyMs.p50).toBeGreaterThanOrEqual(2);
    expect(result.latencyMs.p50).toBeLessThanOrEqual(result.latencyMs.p99);
    expect(result.latencyMs.p99).toBeLessThanOrEqual(result.latencyMs.max);
    expect(result.duration).toBeGreaterThan(0.5);
    expect(result.duration).toBeLessThanOrEqual(0.61);
  });

  it('measures nothing of the warm-up but its failures, and says when the timed run begins', async () => {
    // /3, sent in the warm-up, fails; every other request is answered after a millisecond.
    const answeredAt: number[] = [];
    const port = await listen((req, res) => {
      if (req.url === '/3') {
        res.writeHead(500);
        res.end('warm-up failure');
        return;
      }
      setTimeout(() => res.end('ok'), 1);
    });
    const started = performance.now();
    let timedAt: number | null = null;
    let timedCalls = 0;
    const result = await loadOn(port, {
      connections: 2,
      seconds: 0.4,
      warmupSeconds: 0.3,
      onTimed() {
        timedCalls++;
        timedAt = performance.now() - started;
      },
      onResponse() {
        answeredAt.push(performance.now() - started);
      },
    });
    expect(timedCalls).toBe(1);
    expect(timedAt).toBeGreaterThanOrEqual(299);
    expect(timedAt).toBeLessThan(400);
    // The timed run is 300-700 ms from the start; this clock started a moment before the generator's, so an answer
    // at either edge may fall on the other side of it (one a connection at each).
    const inTimedRun = answeredAt.filter((t) => t >= 300 && t <= 700).length;
    const inWarmup = answeredAt.filter((t) => t < 300).length;
    expect(inWarmup).toBeGreaterThan(10);
    expect(result.answered).toBe(answeredAt.length);
    expect(Math.abs(result.total - inTimedRun)).toBeLessThanOrEqual(4);
    expect(result.total).toBeGreaterThan(10);
    expect(result.duration).toBeGreaterThan(0.39);
    expect(result.duration).toBeLessThanOrEqual(0.41);
    // The warm-up's failure is reported, not hidden with its latencies.
    expect(result.non2xx).toBe(1);
    // Under a second in all: no whole second to report.
    expect(result.answersBySecond).toEqual([]);
  });

  it('gives up an answer that never comes, counts a timeout, and goes on on a new connection', async () => {
    let received = 0;
    const port = await listen((req, res) => {
      received++;
      if (req.url === '/0') return; // never answered
      res.end('ok');
    });
    let answers = 0;
    const started = performance.now();
    const result = await loadOn(port, {
      seconds: 0.8,
      timeoutMs: 300,
      onResponse: () => {
        answers++;
      },
    });
    expect(result.timeouts).toBe(1);
    // Every request but the one given up was answered; the last may have been answered after the run's end,
    // which the rate does not count.
    expect(answers).toBe(received - 1);
    expect(answers - result.total).toBeGreaterThanOrEqual(0);
    expect(answers - result.total).toBeLessThanOrEqual(1);
    expect(result.total).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(2500);
  });

  it('counts a connection the server drops in the middle of an answer as an error', async () => {
    const port = await listen((req, res) => {
      if (req.url === '/3') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('only part of it');
        setTimeout(() => req.socket.destroy(), 5);
        return;
      }
      res.end('ok');
    });
    const result = await loadOn(port, {});
    expect(result.errors).toBe(1);
    expect(result.timeouts).toBe(0);
    expect(result.total).toBeGreaterThan(4);
  });
});
