/**
 * How the Stream API (/v1) reads a request body whose Content-Type does not say JSON (the
 * form parser described here is the application's, src/http/form-body.ts, for every API family).
 *
 * Its endpoints take JSON. `curl -d '{...}'` sends the JSON text as
 * application/x-www-form-urlencoded, and some clients send a body with no Content-Type at all.
 * Both are read as JSON when the body is JSON text, where they used to fail with
 * `"name" is missing from body` (the JSON text taken as a form key) or a bare 415; so is JSON
 * text sent as text/plain (what fetch() says of a string body without a Content-Type).
 *
 * Parsed rather than refused with a 415, because:
 * - the intent is not in doubt: a form body that starts with `{` or `[` is JSON text, no form
 *   of these endpoints' fields looks like that;
 * - it is what users who follow curl habits (`curl -d` without
 *   `-H 'Content-Type: application/json'`) expect to work;
 * - it is what the reference does: Goa's default request decoder reads a body with no
 *   Content-Type, or with one it does not know (form encoding included), as JSON. (It reads
 *   text/plain as text; Sluice reads JSON text there as JSON too, for fetch's sake.)
 * A real form body (`name=Shop&type=http`) is still a form, exactly as before. A body of any
 * other declared type that has no parser here (application/xml, ...) is a 415 that names the
 * expected type.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../http/errors.js';
import { isJsonText } from '../../http/form-body.js';
import { boundedJsonParser } from '../../http/json-depth.js';

/** A 415 in the Stream envelope, naming the type the endpoints take. */
export function unsupportedMediaType(contentType: string | undefined): ApiError {
  return new ApiError(415, 'unsupportedMediaType',
    `Unsupported content type "${contentType ?? ''}": send the body as JSON, with Content-Type: application/json.`);
}

/**
 * Registers, in the Stream API's plugin context, the parsers of text/plain and of bodies
 * without a Content-Type (the form parser that reads JSON text as JSON is the application's,
 * src/http/form-body.ts). The JSON parser of the application (wiring/http-app.ts: an empty body is no body;
 * prototype poisoning refused; at most `maxJsonDepth` levels) is reused for both.
 */
export function streamBodyParsers(app: FastifyInstance, maxJsonDepth: number): void {
  const defaultJson = boundedJsonParser(app, maxJsonDepth);
  const parseJson = (req: FastifyRequest, body: string, done: (err: Error | null, body?: unknown) => void) => {
    if (body.trim() === '') return done(null, undefined);
    defaultJson(req, body, done);
  };

  // fetch() sends a string body as text/plain unless told otherwise: JSON text is JSON there
  // too; any other text stays the string fastify's own parser gives.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (isJsonText(text)) return parseJson(req, text, done);
    done(null, text);
  });

  // '*' is also the parser of a body without any Content-Type header.
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    if (req.headers['content-type'] === undefined) return parseJson(req, body as string, done);
    done(unsupportedMediaType(req.headers['content-type']));
  });
}
