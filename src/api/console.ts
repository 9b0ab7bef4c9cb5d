/**
 * The web console at /console (the api role): the static files `npm run build` writes to
 * dist/console (scripts/build-console.mjs), served by @fastify/static. The console talks to the
 * documented APIs only; this plugin serves files and nothing else.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import fastifyStatic from '@fastify/static';
import { SLUICE_ICON } from './icon.js';

/**
 * dist/console of the project, from src/api/ (tests) as from dist/api/ (the built service);
 * SLUICE_CONSOLE_DIR serves another build (development: `node scripts/build-console.mjs <dir>`).
 */
export function consoleDir(): string {
  return process.env.SLUICE_CONSOLE_DIR || join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'dist', 'console');
}

/** The page may load its own files and call its own origin; nothing else. */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export const consoleRoutes: FastifyPluginAsync<{ dir?: string }> = async (app, opts) => {
  const dir = opts.dir ?? consoleDir();
  const built = existsSync(join(dir, 'index.html'));
  app.addHook('onSend', async (_req, reply) => {
    reply.header('content-security-policy', CSP);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
  });
  app.get('/console', { schema: { tags: ['console'], summary: 'The web console' } }, async (_req, reply) => reply.redirect('/console/', 302));
  const icon = async (_req: unknown, reply: FastifyReply) => reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(SLUICE_ICON);
  app.get('/console/favicon.svg', { schema: { hide: true } }, icon);
  // Browsers ask for it on every page that names no icon (the JSON answers they show).
  app.get('/favicon.ico', { schema: { hide: true } }, icon);
  if (!built) {
    app.get('/console/*', { schema: { hide: true } }, async (_req, reply) =>
      reply.code(404).type('text/plain; charset=utf-8').send('The console is not built: run "npm run build" (it writes dist/console).\n'),
    );
    return;
  }
  await app.register(fastifyStatic, { root: dir, prefix: '/console/', index: ['index.html'], cacheControl: true, maxAge: 0, schemaHide: true });
};
