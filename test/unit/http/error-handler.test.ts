import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { DomainError, type ErrorKind } from '../../../src/domain-errors.js';
import { ApiError, STATUS_OF_KIND, statusOf } from '../../../src/http/errors.js';
import { answerErrorsWith, requestRefusal, type ErrorFormatter } from '../../../src/http/error-handler.js';
import { streamErrors } from '../../../src/api/stream/envelope.js';
import { storageErrors } from '../../../src/api/storage/envelope.js';
import { queueErrors } from '../../../src/api/queue/envelope.js';
import { ingestErrors } from '../../../src/sources/ingest/envelope.js';
import { otlpErrors } from '../../../src/sources/otlp/answers.js';
import { QueueError } from '../../../src/queue/errors.js';
import { TargetUnavailableError } from '../../../src/ports/target.js';

describe('kind -> status', () => {
  it.each<[ErrorKind, number]>([
    ['invalid', 400],
    ['unauthorized', 401],
    ['forbidden', 403],
    ['notFound', 404],
    ['alreadyExists', 409],
    ['conflict', 409],
    ['limitReached', 422],
    ['unavailable', 503],
  ])('%s answers %i', (kind, status) => {
    expect(STATUS_OF_KIND[kind]).toBe(status);
    expect(statusOf(new DomainError(kind, 'code', 'message'))).toBe(status);
  });

  it('covers every kind, and a reference quirk overrides it', () => {
    expect(Object.keys(STATUS_OF_KIND).sort()).toEqual(['alreadyExists', 'conflict', 'forbidden', 'invalid', 'limitReached', 'notFound', 'unauthorized', 'unavailable']);
    expect(statusOf(new DomainError('alreadyExists', 'configurationAlreadyExists', 'exists', { status: 400 }))).toBe(400);
  });

  it('tells requests fastify refused from other errors', () => {
    expect(requestRefusal(Object.assign(new Error('x'), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' }))?.type).toBe('tooLarge');
    expect(requestRefusal(Object.assign(new Error('x'), { statusCode: 400, validation: [] }))?.type).toBe('validation');
    expect(requestRefusal(Object.assign(new Error('x'), { statusCode: 405 }))?.type).toBe('other');
    expect(requestRefusal(new Error('boom'))).toBeUndefined();
    expect(requestRefusal(Object.assign(new Error('x'), { statusCode: 502 }))).toBeUndefined();
  });
});

describe('the shared error handler in each envelope', () => {
  let app: FastifyInstance;
  const families: Record<string, ErrorFormatter> = {
    stream: streamErrors,
    storage: storageErrors,
    queue: queueErrors,
    ingest: ingestErrors(1024),
    otlp: otlpErrors(1024),
  };

  beforeAll(async () => {
    app = Fastify({ logger: false });
    for (const [name, formatter] of Object.entries(families)) {
      await app.register(async (family) => {
        answerErrorsWith(family, formatter);
        family.get('/unknown', async () => {
          throw new Error('secret detail');
        });
        family.get('/domain', async () => {
          throw new DomainError('notFound', 'sinkNotFound', 'sink "x" not found in the source');
        });
        family.get('/conflict', async () => {
          throw new QueueError('conflict', 'Invalid status transition.', 'statusTransitionForbidden');
        });
        family.get('/target', async () => {
          throw new TargetUnavailableError('connection refused');
        });
        family.get('/api', async () => {
          throw new ApiError(401, 'storage.tokenInvalid', 'Invalid access token');
        });
      }, { prefix: `/${name}` });
    }
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
  });

  const get = async (url: string) => {
    const res = await app.inject({ method: 'GET', url });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
  };

  it('answers an unknown error with 500 and an exception id, its message hidden', async () => {
    const stream = await get('/stream/unknown');
    expect(stream.status).toBe(500);
    expect(stream.body).toEqual({
      statusCode: 500,
      error: 'stream.api.internalError',
      message: `Application error. Please contact our support with exception id (${String(stream.body.exceptionId)}) attached.`,
      exceptionId: expect.stringMatching(/^sluice-stream-api-/),
    });

    const storage = await get('/storage/unknown');
    expect(storage.status).toBe(500);
    expect(storage.body).toEqual({
      error: `Application error. Please contact our support with exception id (${String(storage.body.exceptionId)}) attached.`,
      code: 'storage.internalError',
      status: 'error',
      exceptionId: expect.stringMatching(/^sluice-storage-/),
    });

    const queue = await get('/queue/unknown');
    expect(queue.status).toBe(500);
    expect(queue.body).toEqual({
      error: 'Internal Server Error occurred.',
      code: 500,
      exceptionId: expect.stringMatching(/^exception-[0-9a-f]{32}$/),
      status: 'error',
      context: {},
    });

    const ingest = await get('/ingest/unknown');
    expect(ingest.status).toBe(500);
    expect(ingest.body).toEqual({
      statusCode: 500,
      error: 'stream.in.genericError',
      message: `Application error. Please contact our support with exception id (${String(ingest.body.exceptionId)}) attached.`,
      exceptionId: expect.stringMatching(/^sluice-stream-in-/),
    });

    // OTLP answers a google.rpc.Status (JSON form here): no exception id.
    const otlp = await get('/otlp/unknown');
    expect(otlp.status).toBe(500);
    expect(otlp.body).toEqual({ code: 13, message: 'Internal error.', statusCode: 500, error: 'stream.in.genericError' });
  });

  it('answers a domain error with the status of its kind, in each envelope', async () => {
    expect(await get('/stream/domain')).toMatchObject({
      status: 404,
      body: { statusCode: 404, error: 'stream.api.sinkNotFound', message: 'Sink "x" not found in the source.' },
    });
    expect((await get('/storage/domain')).body).toEqual({ error: 'sink "x" not found in the source', code: 'sinkNotFound', status: 'error' });
    expect(await get('/queue/conflict')).toMatchObject({
      status: 409,
      body: { error: 'Invalid status transition.', code: 409, status: 'error', context: { errorCode: 'statusTransitionForbidden' } },
    });
    expect((await get('/ingest/domain')).status).toBe(404);
  });

  it('answers the target being unreachable with 503 and the reason', async () => {
    const message = 'The tables cannot be reached now; try again in a moment (connection refused).';
    const stream = await get('/stream/target');
    expect(stream.status).toBe(503);
    expect(stream.body).toMatchObject({ statusCode: 503, error: 'stream.api.targetUnavailable', message });
    const storage = await get('/storage/target');
    expect(storage.body).toMatchObject({ error: message, code: 'targetUnavailable', status: 'error' });
    expect(storage.body.exceptionId).toMatch(/^sluice-storage-/);
  });

  it('answers an ApiError with its own status and code', async () => {
    expect((await get('/storage/api')).body).toEqual({ error: 'Invalid access token', code: 'storage.tokenInvalid', status: 'error' });
    const queue = await get('/queue/api');
    expect(queue.status).toBe(401);
    expect(queue.body).toMatchObject({ error: 'Invalid access token', code: 401, context: { errorCode: 'storage.tokenInvalid' } });
  });
});
