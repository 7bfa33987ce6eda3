import type { FastifyRequest } from 'fastify';
import { httpError } from './errors.ts';

export function rawBodyOf(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

export function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return request.headers['transfer-encoding'] !== undefined;
}

export function mediaType(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Parses the raw JSON body into request.body; anything but a JSON object is a 400. */
export function parseJsonObjectBody(request: FastifyRequest): void {
  const raw = rawBodyOf(request);
  if (raw.length === 0) throw httpError(400, 'body must be object');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw httpError(400, 'body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw httpError(400, 'body must be object');
  }
  request.body = parsed;
}
