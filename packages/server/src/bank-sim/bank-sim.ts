import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  BALANCE_PATH,
  CURRENCY_PATTERN,
  checkTransferRequest,
  STATEMENT_PATH,
  TRANSFERS_PATH,
} from '../rails/gateway/protocol.ts';
import { verifyRequest } from '../rails/gateway/signature.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import { parsePositiveMinor } from '../shared/money.ts';
import { type BankSimFaults, createFaultBook, type FaultBook } from './faults.ts';
import { parseJson, readBody, sendError, sendJson } from './http-io.ts';
import { type BankSimLedger, createSimLedger, type SimLedger, toWireLine } from './ledger.ts';
import { type Delivery, processTransfer, queryTransfer, type TransferDeps } from './transfers.ts';

/**
 * A bank behind the gateway protocol, as a separate HTTP server with books of its own, for testing the
 * production rail and for operators trying the protocol before writing their adapter. Faults are chosen
 * through the control API (or the returned `faults`), never by magic amounts.
 */

export interface BankSimOptions {
  port: number;
  host?: string;
  keyId: string;
  secret: string;
  /** Bank code of the simulated bank: a CCE transfer to another bank settles later, to this one at once. */
  ownBankCode?: string;
  openingBalances?: Record<string, bigint>;
  /** Drives booking dates, settlement, returns, delayed lines and fault windows. Authentication always
   * checks timestamps against the wall clock, as a real receiver does. */
  clock?: Clock;
  /** How long an interbank CCE transfer stays accepted_pending_settlement. */
  settleMs?: number;
  perTransferLimitMinor?: bigint | null;
  /** The bank's local time zone, for value dates and outside-hours windows (Caracas: -240). */
  utcOffsetMinutes?: number;
}

export interface BankSim {
  url: string;
  close(): Promise<void>;
  faults: BankSimFaults;
  ledger: BankSimLedger;
}

const DEFAULT_PAGE = 100;
const MAX_PAGE = 1000;

interface Context {
  ledger: SimLedger;
  faults: FaultBook;
  transfers: TransferDeps;
  /** Timers of held answers and latency, cleared on close so nothing outlives the server. */
  timers: Set<NodeJS.Timeout>;
}

function later(ctx: Context, ms: number, run: () => void): void {
  const timer = setTimeout(() => {
    ctx.timers.delete(timer);
    run();
  }, ms);
  ctx.timers.add(timer);
}

function deliver(ctx: Context, req: IncomingMessage, res: ServerResponse, delivery: Delivery) {
  switch (delivery.kind) {
    case 'answer':
      return sendJson(res, 200, delivery.answer);
    case 'stall': {
      const { answer, answerAfterMs } = delivery;
      // Never answering: the socket stays open until the client gives up or the simulator closes.
      if (answerAfterMs !== null) later(ctx, answerAfterMs, () => sendJson(res, 200, answer));
      return;
    }
    case 'drop':
      req.socket.destroy();
      return;
    case 'http_error':
      return sendError(res, delivery.status, 'internal', 'simulated gateway failure');
    case 'malformed':
      if (res.writableEnded) return;
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body>Service Temporarily Unavailable</body></html>');
      return;
  }
}

function statement(ctx: Context, url: URL, res: ServerResponse) {
  const since = url.searchParams.get('since');
  const limitText = url.searchParams.get('limit');
  let from = 0;
  if (since !== null) {
    if (!/^\d{1,12}$/.test(since) || Number(since) > ctx.ledger.visibleCount()) {
      return sendError(res, 400, 'invalid_cursor', 'since is not a cursor this bank gave out');
    }
    from = Number(since);
  }
  let limit = DEFAULT_PAGE;
  if (limitText !== null) {
    if (!/^\d{1,4}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_PAGE) {
      return sendError(res, 400, 'invalid_request', `limit must be between 1 and ${MAX_PAGE}`);
    }
    limit = Number(limitText);
  }
  const page = ctx.ledger.page(from, limit);
  sendJson(res, 200, { lines: page.lines.map(toWireLine), cursor: String(page.next) });
}

function balance(ctx: Context, url: URL, res: ServerResponse) {
  const currency = url.searchParams.get('currency');
  if (currency === null || !CURRENCY_PATTERN.test(currency)) {
    return sendError(res, 400, 'invalid_request', 'currency must be three upper-case letters');
  }
  sendJson(res, 200, { currency, balanceMinor: ctx.ledger.balance(currency).toString(10) });
}

function control(ctx: Context, method: string, path: string, body: Buffer, res: ServerResponse) {
  if (path === '/_control/faults') {
    if (method === 'GET') return sendJson(res, 200, { faults: ctx.faults.list() });
    if (method === 'DELETE') return sendJson(res, 200, { cleared: ctx.faults.clear() });
    if (method !== 'POST') return sendError(res, 405, 'method_not_allowed');
    try {
      const id = ctx.faults.inject(parseJson(body));
      return sendJson(res, 201, { id, fault: ctx.faults.list().find((f) => f.id === id)?.fault ?? null });
    } catch (error) {
      if (error instanceof RangeError) return sendError(res, 400, 'invalid_request', error.message);
      throw error;
    }
  }
  const faultId = /^\/_control\/faults\/([A-Za-z0-9_]+)$/.exec(path)?.[1];
  if (faultId !== undefined) {
    if (method !== 'DELETE') return sendError(res, 405, 'method_not_allowed');
    return ctx.faults.remove(faultId) ? sendJson(res, 200, { removed: faultId }) : sendError(res, 404, 'not_found');
  }
  if (path === '/_control/credits') {
    if (method !== 'POST') return sendError(res, 405, 'method_not_allowed');
    const input = parseJson(body) as { amountMinor?: unknown; currency?: unknown; reference?: unknown } | undefined;
    const amount = parsePositiveMinor(input?.amountMinor);
    const currency = input?.currency ?? 'VES';
    const reference = input?.reference;
    if (amount === null) return sendError(res, 400, 'invalid_request', 'amountMinor must be a positive integer string');
    if (typeof currency !== 'string' || !CURRENCY_PATTERN.test(currency)) {
      return sendError(res, 400, 'invalid_request', 'currency must be three upper-case letters');
    }
    if (typeof reference !== 'string' || reference.length === 0 || reference.length > 140) {
      return sendError(res, 400, 'invalid_request', 'reference must be a non-empty string');
    }
    const line = ctx.ledger.credit({ amountMinor: amount, currency, reference });
    return sendJson(res, 201, { line: toWireLine(line) });
  }
  sendError(res, 404, 'not_found');
}

async function handle(
  ctx: Context,
  auth: { keyId: string; secret: string },
  req: IncomingMessage,
  res: ServerResponse,
) {
  const body = await readBody(req);
  if (body === null) return sendError(res, 413, 'body_too_large');
  const method = req.method ?? 'GET';
  const target = req.url ?? '/';
  const check = verifyRequest({
    headers: req.headers,
    method,
    target,
    body,
    nowMs: Date.now(),
    secretOf: (keyId) => (keyId === auth.keyId ? auth.secret : null),
  });
  if (!check.ok) return sendError(res, 401, check.code);

  const url = new URL(target, 'http://bank-sim.invalid');
  const path = url.pathname;
  if (path.startsWith('/_control/')) return control(ctx, method, path, body, res);

  const referenceMatch = /^\/v1\/transfers\/([^/]+)$/.exec(path);
  let reference: string | null = null;
  if (referenceMatch !== null) {
    try {
      reference = decodeURIComponent(referenceMatch[1]!);
    } catch {
      return sendError(res, 400, 'invalid_request', 'reference is not valid percent-encoding');
    }
  }
  const submitted = path === TRANSFERS_PATH && method === 'POST' ? checkTransferRequest(parseJson(body)) : null;
  const latency = ctx.faults.take(['latency'], submitted?.ok ? submitted.value.reference : reference);
  if (latency?.kind === 'latency' && latency.ms > 0) {
    await new Promise<void>((resolve) => later(ctx, latency.ms, resolve));
  }

  if (path === TRANSFERS_PATH) {
    if (submitted === null) return sendError(res, 405, 'method_not_allowed');
    if (!submitted.ok) return sendError(res, 400, 'invalid_request', submitted.problem);
    return deliver(ctx, req, res, processTransfer(ctx.transfers, submitted.value));
  }
  if (reference !== null) {
    if (method !== 'GET') return sendError(res, 405, 'method_not_allowed');
    const answer = queryTransfer(ctx.ledger, reference);
    return answer === null ? sendError(res, 404, 'transfer_not_found') : sendJson(res, 200, answer);
  }
  if (path === STATEMENT_PATH || path === BALANCE_PATH) {
    if (method !== 'GET') return sendError(res, 405, 'method_not_allowed');
    return path === STATEMENT_PATH ? statement(ctx, url, res) : balance(ctx, url, res);
  }
  sendError(res, 404, 'not_found');
}

export async function startBankSim(options: BankSimOptions): Promise<BankSim> {
  const clock = options.clock ?? systemClock;
  const utcOffsetMinutes = options.utcOffsetMinutes ?? -240;
  const faults = createFaultBook({ clock, utcOffsetMinutes });
  const ledger = createSimLedger({
    clock,
    openingBalances: options.openingBalances ?? {},
    utcOffsetMinutes,
    lineEffects: (reference) => {
      const delay = faults.take(['delay_lines'], reference);
      const duplicate = faults.take(['duplicate_line'], reference);
      return { delayMs: delay?.kind === 'delay_lines' ? delay.ms : 0, duplicate: duplicate !== null };
    },
  });
  const ctx: Context = {
    ledger,
    faults,
    timers: new Set(),
    transfers: {
      ledger,
      faults,
      clock,
      ownBankCode: options.ownBankCode ?? '0102',
      settleMs: options.settleMs ?? 2000,
      perTransferLimitMinor: options.perTransferLimitMinor ?? null,
    },
  };
  const auth = { keyId: options.keyId, secret: options.secret };
  const server = createServer((req, res) => {
    handle(ctx, auth, req, res).catch((error: unknown) => {
      sendError(res, 500, 'internal', error instanceof Error ? error.message : 'unexpected failure');
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    faults,
    ledger,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of ctx.timers) clearTimeout(timer);
        ctx.timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
