import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { httpError } from '../http/errors.ts';

/**
 * The operator console (packages/console, built into its dist/ by `npm run build`, which `npm start` and `npm test`
 * run first) served by the operator listener at /console/. The files hold no data and no secret, so they are served
 * without the token; everything the console shows or does is an operator API call carrying the admin token the
 * operator typed in, kept in the tab's sessionStorage. The content security policy allows this origin only, so no
 * other script can run on the page that holds the token.
 */
const DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

export function registerConsoleRoutes(app: FastifyInstance, options: { dist?: string } = {}): void {
  const dist = options.dist ?? DIST;
  const open = { config: { operatorAccess: 'open' as const }, schema: { hide: true } };

  async function send(file: string) {
    try {
      return await readFile(path.join(dist, file));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      if (file === 'index.html') {
        throw httpError(503, 'the console is not built: run npm run build (npm start and npm test do it first)');
      }
      throw httpError(404, 'not found');
    }
  }

  app.get('/', open, async (_request, reply) => reply.redirect('/console/'));
  app.get('/console', open, async (_request, reply) => reply.redirect('/console/'));
  app.get('/console/', open, async (_request, reply) =>
    reply
      .headers(SECURITY_HEADERS)
      .type(TYPES['.html']!)
      .send(await send('index.html')),
  );
  app.get<{ Params: { file: string } }>('/console/assets/:file', open, async (request, reply) => {
    const file = request.params.file;
    const type = TYPES[path.extname(file)];
    if (!/^[a-z0-9-]+\.(js|css|svg)$/.test(file) || type === undefined) throw httpError(404, 'not found');
    return reply
      .headers(SECURITY_HEADERS)
      .type(type)
      .send(await send(path.join('assets', file)));
  });
}
