import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

function noop(): void {}

/**
 * Every request's logger (fastify's `childLoggerFactory`), made only when the request writes a line at a level the
 * service logs. A pino child serialises its bindings (the trace id) through the redaction paths when it is made,
 * and fastify makes one per request: about 2 % of a signed request's server time, for a logger that at `warn`, the
 * level a busy node runs at (docs/operations.md), almost never writes. A level that is off stays pino's no-op; any
 * other, and `child()` or `bindings()`, make the real child once and use it from then on, so every line still
 * carries the trace id. At `info` every request writes, and the child is made at its first line as before.
 */
export function lazyRequestLogger(
  fastifyLogger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  // fastify's logger is the pino instance buildFastify gives it (loggerInstance), with fastify's serialisers added.
  const parent = fastifyLogger as Logger;
  // A route with a level of its own (fastify passes it in the options) gets its child at once.
  if (options.level !== undefined) return parent.child(bindings, options);
  let child: Logger | undefined;
  const made = (): Logger => {
    child ??= parent.child(bindings, options);
    return child;
  };
  const lazy: Record<string, unknown> = Object.create(parent);
  for (const level of LEVELS) {
    lazy[level] = parent.isLevelEnabled(level)
      ? (...args: unknown[]) => {
          const real = made();
          (real[level] as (...a: unknown[]) => void).apply(real, args);
        }
      : noop;
  }
  lazy['child'] = (more: Bindings, moreOptions?: ChildLoggerOptions) => made().child(more, moreOptions);
  lazy['bindings'] = () => made().bindings();
  return lazy as unknown as FastifyBaseLogger;
}
