import { ConnectionError, DispersaError } from '@dispersa/sdk';
import { UsageError } from './args.ts';
import { renderPretty } from './table.ts';

/**
 * What the CLI prints and how it exits. stdout carries exactly one JSON document on success (the response
 * payload), stderr carries notes for people and, on failure, one JSON object `{ "error", "status"?, "traceId"? }`
 * (the service's `{error}` body plus the HTTP status). The exit status tells what kind of failure it was.
 */

export const EXIT = {
  ok: 0,
  /** The service answered with a non-2xx status. */
  api: 1,
  /** Wrong flags or arguments, missing or unreadable credentials: nothing was sent. */
  usage: 2,
  /** No answer at all: connection refused or reset, DNS, timeout. The outcome of a write is then unknown. */
  connection: 3,
  /** A defect or an unexpected local failure. */
  internal: 70,
} as const;

export interface ErrorReport {
  exitCode: number;
  body: { error: string; status?: number; traceId?: string };
  /** Extra line for people (the usage of the command, or a hint). */
  hint?: string;
}

export function formatResult(value: unknown, pretty: boolean): string {
  if (pretty) return renderPretty(value);
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Which listener and credentials a command used, so that a failure can name the setting that fixes it. */
export type ConnectionKind = 'client' | 'public' | 'admin' | 'none';

function connectionHint(kind: ConnectionKind): string {
  const setting =
    kind === 'admin'
      ? 'DISPERSA_ADMIN_URL (or --admin-url) to the operator API'
      : 'DISPERSA_BASE_URL (or --base-url) to the public API';
  return `no answer from the service: is it running? If it listens elsewhere, set ${setting}`;
}

function refusalHint(kind: ConnectionKind, message: string): string | undefined {
  if (kind === 'admin') return 'the operator API refused the token: set DISPERSA_ADMIN_TOKEN (or --admin-token)';
  if (kind !== 'client') return undefined;
  if (message === 'nonce replay') {
    return (
      'another signer used this key with a higher nonce: every process signing with one key must share ' +
      'DISPERSA_NONCE_FILE (or --nonce-file)'
    );
  }
  return (
    'the service refused the key or the signature: check that DISPERSA_API_KEY and DISPERSA_PRIVATE_KEY_FILE ' +
    '(or --api-key, --private-key-file) belong together and to this environment (DISPERSA_BASE_URL)'
  );
}

export function reportError(err: unknown, kind: ConnectionKind = 'client'): ErrorReport {
  if (err instanceof UsageError) return { exitCode: EXIT.usage, body: { error: err.message } };
  if (err instanceof ConnectionError) {
    return { exitCode: EXIT.connection, body: { error: err.message }, hint: connectionHint(kind) };
  }
  if (err instanceof DispersaError) {
    const body: ErrorReport['body'] = { error: err.message };
    if (err.status !== undefined) body.status = err.status;
    if (err.traceId !== undefined) body.traceId = err.traceId;
    const hint = err.status === 401 ? refusalHint(kind, err.message) : undefined;
    return { exitCode: EXIT.api, body, ...(hint === undefined ? {} : { hint }) };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { exitCode: EXIT.internal, body: { error: message } };
}

export function formatError(report: ErrorReport, pretty: boolean): string {
  if (!pretty) return `${JSON.stringify(report.body)}\n`;
  const { error, status, traceId } = report.body;
  const where = status === undefined ? '' : ` (HTTP ${status}${traceId === undefined ? '' : `, trace ${traceId}`})`;
  return `error${where}: ${error}\n`;
}
