/**
 * The form parser of every API family: `curl -d '{...}'` sends JSON text as
 * application/x-www-form-urlencoded, so a form body that is JSON text (it opens an object or an
 * array; no form of these APIs looks like that) is read as JSON; any other form body is a form,
 * as @fastify/formbody read it (the Storage API's configurations and tokens take real forms).
 * Why parse rather than refuse: see src/api/stream/body.ts.
 */
import { parse as parseQueryString } from 'node:querystring';
import type { FastifyInstance } from 'fastify';
import { boundedJsonParser } from './json-depth.js';

const FORM = 'application/x-www-form-urlencoded';

/** The first character that is not JSON whitespace opens an object or an array. */
export function isJsonText(body: string): boolean {
  return /^[ \t\r\n]*[{[]/.test(body);
}

/**
 * Replaces the form parser of `app` (registered after @fastify/formbody and the JSON parser); JSON
 * text nested deeper than `maxJsonDepth` is refused (json-depth.ts).
 */
export function formBodyParser(app: FastifyInstance, maxJsonDepth: number): void {
  const json = boundedJsonParser(app, maxJsonDepth);
  app.removeContentTypeParser(FORM);
  app.addContentTypeParser(FORM, { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (isJsonText(text)) return json(req, text, done);
    // @fastify/formbody's parse (fast-querystring) gives what node:querystring gives, without a
    // limit on the number of keys.
    done(null, parseQueryString(text, '&', '=', { maxKeys: 0 }));
  });
}
