import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { lazyRequestLogger } from '../../src/http/request-logger.ts';
import { createLogger } from '../../src/logger.ts';
import { startTestServer, type TestClient } from '../support/test-server.ts';

/**
 * A request's logger is made only when the request writes a line at a level the service logs (http/request-logger.ts),
 * and every line it writes still carries the request's trace id.
 */

function sink(): { stream: Writable; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { stream, lines };
}

describe('the lazy request logger', () => {
  it('makes no child for lines below the level, and one child for the lines at or above it', () => {
    const { stream, lines } = sink();
    const parent = createLogger('warn', stream);
    const child = vi.spyOn(parent, 'child');
    const log = lazyRequestLogger(parent, { traceId: 'tr_lazy' }, {});

    log.info({ detail: 1 }, 'not logged');
    log.debug('not logged');
    log.trace('not logged');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);

    log.warn({ detail: 2 }, 'first');
    log.error(new Error('boom'), 'second');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.map((l) => [l['msg'], l['traceId'], l['service']])).toEqual([
      ['first', 'tr_lazy', 'dispersa'],
      ['second', 'tr_lazy', 'dispersa'],
    ]);
    expect(lines[0]!['detail']).toBe(2);
    expect((lines[1]!['err'] as { message: string }).message).toBe('boom');
  });

  it("keeps the trace id in its own children, its bindings, and the parent's redaction", () => {
    const { stream, lines } = sink();
    const parent = createLogger('info', stream);
    const log = lazyRequestLogger(parent, { traceId: 'tr_kept' }, {});
    expect(log.level).toBe('info');
    log.child({ part: 'inner' }).info({ apiKey: 'sk_test_secret' }, 'nested');
    expect((log as unknown as { bindings(): object }).bindings()).toEqual({ service: 'dispersa', traceId: 'tr_kept' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'nested', traceId: 'tr_kept', part: 'inner', apiKey: '[redacted]' });
  });

  it('gives a route with a level of its own its child at once', () => {
    const { stream, lines } = sink();
    const parent = createLogger('warn', stream);
    const log = lazyRequestLogger(parent, { traceId: 'tr_route' }, { level: 'debug' });
    log.debug('route level');
    expect(lines.map((l) => [l['msg'], l['traceId']])).toEqual([['route level', 'tr_route']]);
  });
});

describe('request logs through the server', () => {
  async function linesOfOneRequest(level: 'info' | 'debug'): Promise<Record<string, unknown>[]> {
    const { stream, lines } = sink();
    const server = await startTestServer({ logger: createLogger(level, stream) });
    try {
      const client: TestClient = await server.newClient();
      const res = await client.api.get('/v2/me');
      expect(res.status).toBe(200);
      const traceId = res.headers.get('x-trace-id');
      expect(traceId).toMatch(/^tr_/);
      // The completed line is written once the answer is out; wait for it before reading.
      await vi.waitFor(() =>
        expect(lines.some((l) => l['traceId'] === traceId && l['msg'] === 'request completed')).toBe(true),
      );
      return lines.filter((l) => l['traceId'] === traceId);
    } finally {
      await server.stop();
    }
  }

  it('write one line a request at info: the request, its status and time, and the trace id the answer gives', async () => {
    const mine = await linesOfOneRequest('info');
    expect(mine.map((l) => l['msg'])).toEqual(['request completed']);
    const line = mine[0]!;
    expect(line['level']).toBe(30);
    expect(line['req']).toMatchObject({ method: 'GET', url: '/v2/me' });
    expect((line['req'] as Record<string, unknown>)['headers']).toBeUndefined();
    expect(line['res']).toEqual({ statusCode: 200 });
    expect(typeof line['responseTime']).toBe('number');
  });

  it('add the arrival line at debug', async () => {
    const mine = await linesOfOneRequest('debug');
    expect(
      mine.filter((l) => l['msg'] === 'incoming request' || l['msg'] === 'request completed').map((l) => l['msg']),
    ).toEqual(['incoming request', 'request completed']);
    expect(mine.find((l) => l['msg'] === 'incoming request')!['level']).toBe(20);
  });
});
