import type { FastifyRequest } from 'fastify';
import { httpError } from './errors.ts';

/**
 * The one input rule at the edge, for every string the service accepts (public and operator API, body, path and
 * query): a control character (U+0000-U+001F, U+007F) or a lone surrogate is refused with 400 naming the field,
 * before any service sees the value. PostgreSQL refuses NUL in text (22021), so without this rule such a value
 * became a 500 that a client told to retry 5xx would retry forever; the other control characters have no place in
 * a name, an account, a reference or an id either. A few operator fields hold text files or free notes, where tab
 * and line breaks are part of the value: those (and only those) keep \t, \n and \r. A public key PEM is left to
 * its own parser, which names the registration rule it breaks.
 *
 * The same holds for the idempotency-key header (the one header whose value is stored). A query parameter given twice
 * and a body nested deeper than any request needs are refused too.
 *
 * A path parameter is an id; one that cannot exist (another shape, too long, a control character) is a 404 before
 * anything reaches the database.
 */

/** Every id the service hands out: a short prefix, an underscore, letters and digits (kid: base64url, 43). */
const PATH_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** Body fields (by name, at any depth) whose value is text of several lines. */
const MULTILINE_FIELDS = new Set(['content', 'note']);
/**
 * Fields a stricter parser of their own reads and that are never stored as sent: a public key is parsed from its
 * PEM block (binary DER is refused naming that registration rule) and only its re-exported PEM is kept.
 */
const OWN_PARSER_FIELDS = new Set(['publicKeyPem']);

const CONTROL = /[\u0000-\u001f\u007f]/;
const CONTROL_BUT_LINE_BREAKS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a string is refused, or null when it is acceptable. */
function flaw(value: string, multiline: boolean): string | null {
  if ((multiline ? CONTROL_BUT_LINE_BREAKS : CONTROL).test(value)) return 'must not contain control characters';
  if (LONE_SURROGATE.test(value)) return 'must be valid Unicode text';
  return null;
}

/** True when a path parameter could be an id this service handed out. */
export function isPossibleId(value: string): boolean {
  return PATH_ID.test(value);
}

/** No request the service takes nests deeper than a few levels; a deeper one is refused before it is walked. */
const MAX_DEPTH = 32;

function checkBody(value: unknown, path: string, multiline: boolean, depth = 0): void {
  if (depth > MAX_DEPTH) throw httpError(400, 'body is nested too deeply');
  if (typeof value === 'string') {
    const problem = flaw(value, multiline);
    if (problem !== null) throw httpError(400, `${path === '' ? 'body' : path} ${problem}`);
    return;
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries())
      checkBody(item, path === '' ? String(i) : `${path}.${i}`, multiline, depth + 1);
    return;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (OWN_PARSER_FIELDS.has(key) && path === '') continue;
      if (flaw(key, false) !== null)
        throw httpError(400, `${path === '' ? 'body' : path} has a field name that is not valid text`);
      checkBody(item, path === '' ? key : `${path}.${key}`, multiline || MULTILINE_FIELDS.has(key), depth + 1);
    }
  }
}

function checkQuery(query: unknown): void {
  if (query === null || typeof query !== 'object') return;
  for (const [key, value] of Object.entries(query)) {
    if (flaw(key, false) !== null) throw httpError(400, 'a query parameter name is not valid text');
    // Every route reads a query parameter as one string: a repeated one would reach it as an array.
    if (Array.isArray(value)) throw httpError(400, `${key} must be given once`);
    if (typeof value === 'string' && flaw(value, false) !== null) throw httpError(400, `${key} ${flaw(value, false)}`);
  }
}

/** Applies the rule to a request whose body (if any) is parsed; throws the HttpError to answer. */
export function enforceInputRules(request: FastifyRequest): void {
  const params = request.params;
  if (params !== null && typeof params === 'object') {
    for (const value of Object.values(params as Record<string, unknown>)) {
      if (typeof value === 'string' && !isPossibleId(value)) throw httpError(404, 'not found');
    }
  }
  checkQuery(request.query);
  // The one header whose value is stored: a tab or DEL (which HTTP lets through) has no place in it either.
  const idempotencyKey = request.headers['idempotency-key'];
  if (typeof idempotencyKey === 'string' && flaw(idempotencyKey, false) !== null) {
    throw httpError(400, `idempotency-key ${flaw(idempotencyKey, false)}`);
  }
  const body = request.body;
  if (body !== undefined && body !== null && !Buffer.isBuffer(body)) checkBody(body, '', false);
}
