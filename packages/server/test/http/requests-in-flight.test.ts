import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { countRequestsInFlight } from '../../src/http/requests-in-flight.ts';

/**
 * Real servers on loopback, real clients: a request counts from its arrival until its response ends or its client
 * leaves.
 */

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A server whose every request waits until the test releases it; `arrived` resolves as each one comes in. */
async function heldServer() {
  const held: Array<() => void> = [];
  let arrivedOne: () => void = () => {};
  const server = createServer((_req, res) => {
    held.push(() => res.end('ok'));
    arrivedOne();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    arrived: () =>
      new Promise<void>((resolve) => {
        arrivedOne = resolve;
      }),
    releaseAll: () => {
      for (const r of held.splice(0)) r();
    },
  };
}

function get(port: number) {
  const req = request({ host: '127.0.0.1', port, path: '/', agent: false });
  const done = new Promise<string>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
  });
  req.end();
  return { req, done };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe('countRequestsInFlight', () => {
  it('counts the requests being served on every server it watches, and none once they are answered', async () => {
    const a = await heldServer();
    const b = await heldServer();
    const inFlight = countRequestsInFlight(a.server, b.server);
    expect(inFlight()).toBe(0);

    let arrived = a.arrived();
    const first = get(a.port);
    await arrived;
    arrived = a.arrived();
    const second = get(a.port);
    await arrived;
    arrived = b.arrived();
    const third = get(b.port);
    await arrived;
    expect(inFlight()).toBe(3);

    a.releaseAll();
    expect(await first.done).toBe('ok');
    expect(await second.done).toBe('ok');
    await until(() => inFlight() === 1);
    b.releaseAll();
    expect(await third.done).toBe('ok');
    await until(() => inFlight() === 0);
  });

  it('stops counting a request whose client went away before the answer', async () => {
    const a = await heldServer();
    const inFlight = countRequestsInFlight(a.server);
    const arrived = a.arrived();
    const gone = get(a.port);
    gone.done.catch(() => {});
    await arrived;
    expect(inFlight()).toBe(1);
    gone.req.destroy();
    await until(() => inFlight() === 0);
    // Answering it later changes nothing.
    a.releaseAll();
    await new Promise((r) => setTimeout(r, 20));
    expect(inFlight()).toBe(0);
  });
});
