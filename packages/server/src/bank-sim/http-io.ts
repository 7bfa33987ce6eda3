import type { IncomingMessage, ServerResponse } from 'node:http';

/** Small helpers of the simulator's node:http server. */

export const MAX_BODY_BYTES = 64 * 1024;

/** The whole request body, or null when it is larger than the cap. */
export function readBody(req: IncomingMessage, cap = MAX_BODY_BYTES): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > cap) over = true;
      if (!over) chunks.push(chunk);
    });
    req.on('end', () => resolve(over ? null : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function sendError(res: ServerResponse, status: number, error: string, detail?: string): void {
  sendJson(res, status, detail === undefined ? { error } : { error, detail });
}

/** JSON of a request body; undefined when it is not JSON. */
export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
