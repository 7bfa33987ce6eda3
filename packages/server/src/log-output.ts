import type { DestinationStream } from 'pino';

/**
 * Where the service's logs go. stdout carries JSON lines only, one per event, for log shippers; when stdout is a
 * terminal (a person ran `npm start`), the same events are written as short readable lines instead.
 */

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service']);

function valueText(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value;
  if (value !== null && typeof value === 'object' && 'message' in value) return JSON.stringify(String(value.message));
  return JSON.stringify(value);
}

/** One JSON log line as a person reads it: `12:00:01 INFO  dispersa started baseUrl=http://...`. */
export function prettyLine(json: string): string {
  let event: Record<string, unknown>;
  try {
    event = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = new Date(typeof event['time'] === 'number' ? event['time'] : Date.now()).toTimeString().slice(0, 8);
  const level = (LEVELS[Number(event['level'])] ?? 'LOG').padEnd(5);
  const fields = Object.entries(event)
    .filter(([k]) => !OMITTED.has(k))
    .map(([k, v]) => `${k}=${valueText(v)}`);
  return `${time} ${level} ${String(event['msg'] ?? '')}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}\n`;
}

/** JSON on a pipe or file; readable lines on a terminal. undefined: pino's own (JSON) stdout destination. */
export function logDestination(stream: NodeJS.WriteStream = process.stdout): DestinationStream | undefined {
  if (stream.isTTY !== true) return undefined;
  return {
    write(line: string) {
      stream.write(prettyLine(line));
    },
  };
}
