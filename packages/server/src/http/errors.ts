/**
 * The one way an HTTP error leaves the service: a status and the spec's body `{ "error": "..." }`.
 * Domain services return typed failures; routes map them to an HttpError with an exhaustive table.
 */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const httpError = (status: number, message: string): HttpError => new HttpError(status, message);

interface AjvLikeError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: Record<string, unknown>;
}

/** The `errorText` a schema gives for the keyword that failed, if any: the whole 400 text, as the spec words it. */
function errorTextOf(e: AjvLikeError): string | undefined {
  const texts = e.parentSchema?.['errorText'];
  if (typeof texts !== 'object' || texts === null) return undefined;
  const text = (texts as Record<string, unknown>)[e.keyword];
  return typeof text === 'string' ? text : undefined;
}

/**
 * Turns the first schema violation into a sentence naming the field, e.g. "amountMinor must be a string", or the
 * `errorText` its schema gives for the keyword. The last error that has one wins: a failed anyOf (or if/then)
 * lists what its branches tried before its own error, and the schema's text is about the whole.
 */
export function formatValidationError(errors: readonly AjvLikeError[], context: string): string {
  for (let i = errors.length - 1; i >= 0; i--) {
    const text = errorTextOf(errors[i]!);
    if (text !== undefined) return text;
  }
  const e = errors[0];
  if (!e) return `invalid ${context}`;
  const path = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const name = path === '' ? context : path;
  const custom = e.parentSchema?.['errorMessage'];
  switch (e.keyword) {
    case 'required': {
      const missing = String(e.params['missingProperty']);
      return `${path === '' ? '' : `${path}.`}${missing} is required`;
    }
    case 'type': {
      if (path === '' && context === 'body') return 'body must be object';
      const type = String(e.params['type']);
      return `${name} must be ${type === 'object' || type === 'array' || type === 'integer' ? 'an' : 'a'} ${type}`;
    }
    case 'enum':
      return `${name} must be one of ${(e.params['allowedValues'] as unknown[]).join(', ')}`;
    case 'const':
      return `${name} must be ${String(e.params['allowedValue'])}`;
    default:
      if (typeof custom === 'string') return `${name} ${custom}`;
      return `${name} ${e.message ?? 'is invalid'}`;
  }
}
