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

export function reportError(err: unknown): ErrorReport {
  if (err instanceof UsageError) return { exitCode: EXIT.usage, body: { error: err.message } };
  if (err instanceof ConnectionError) {
    return {
      exitCode: EXIT.connection,
      body: { error: err.message },
      hint: 'no answer from the service: is it running, and is the URL right?',
    };
  }
  if (err instanceof DispersaError) {
    const body: ErrorReport['body'] = { error: err.message };
    if (err.status !== undefined) body.status = err.status;
    if (err.traceId !== undefined) body.traceId = err.traceId;
    return { exitCode: EXIT.api, body };
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
