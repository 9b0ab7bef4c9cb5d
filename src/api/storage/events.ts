import type { FastifyPluginAsync } from 'fastify';
import type { Project } from '../../storage/project.js';
import type { EventService, StorageEvent } from '../../storage/events.js';
import { ApiError } from '../errors.js';
import { StorageValidationError } from './envelope.js';
import { storageDate } from './format.js';
import { errorResponses, pathParams } from './schemas.js';

const TAGS = ['storage events'];
const str = { type: 'string' } as const;
const freeObject = { type: 'object', additionalProperties: true } as const;

const eventSchema = {
  type: 'object',
  properties: {
    id: str, uuid: str, event: str, component: str, message: str, description: str,
    type: { type: 'string', enum: ['info', 'success', 'warn', 'error'] },
    runId: { type: ['string', 'null'] },
    created: str,
    configurationId: { type: ['string', 'null'] },
    objectId: str, objectName: str, objectType: str,
    context: freeObject, params: freeObject, results: freeObject, performance: freeObject,
  },
} as const;

interface ListQuery {
  runId?: string; component?: string; configurationId?: string; sinceId?: string; maxId?: string; q?: string;
  limit?: string; offset?: string; sortOrder?: string;
}

const eventJson = (e: StorageEvent) => ({ ...e, created: storageDate(e.created) });

export interface EventRoutesOptions {
  project: Pick<Project, 'resolveBranch'>;
  events: Pick<EventService, 'list' | 'get' | 'record'>;
}

/** Storage events (reference §3.8): the job log. Registered under /v2/storage and /branch/{branchId}. */
export const eventRoutes: FastifyPluginAsync<EventRoutesOptions> = async (app, { project, events }) => {
  app.addHook('onRequest', async (req) => {
    const { branchId } = req.params as { branchId?: string };
    if (branchId !== undefined) project.resolveBranch(branchId);
  });

  app.get<{ Querystring: ListQuery }>('/events', {
    schema: {
      tags: TAGS,
      summary: 'List events, newest first',
      description: 'Filters: runId, component, configurationId, sinceId, maxId, q; paging: limit (default 100, max 10000), offset, sortOrder (desc|asc).',
      querystring: {
        type: 'object',
        properties: { runId: str, component: str, configurationId: str, sinceId: str, maxId: str, q: str, limit: str, offset: str, sortOrder: str },
      },
      response: { 200: { type: 'array', items: eventSchema }, ...errorResponses },
    },
  }, async (req) => {
    const q = req.query;
    const sortOrder = q.sortOrder ?? 'desc';
    if (sortOrder !== 'asc' && sortOrder !== 'desc') {
      throw new StorageValidationError('storage.validation', [{ key: 'sortOrder', message: 'This value should be one of "asc", "desc".' }]);
    }
    return events.list({
      runId: q.runId || undefined,
      component: q.component || undefined,
      configurationId: q.configurationId || undefined,
      sinceId: integer(q.sinceId, 'sinceId'),
      maxId: integer(q.maxId, 'maxId'),
      q: q.q || undefined,
      limit: Math.min(Number(integer(q.limit, 'limit') ?? 100), 10_000),
      offset: Number(integer(q.offset, 'offset') ?? 0),
      sortOrder,
    }).map(eventJson);
  });

  app.get<{ Params: { id: string } }>('/events/:id', {
    schema: { tags: TAGS, summary: 'Event detail', params: pathParams(app.prefix, 'id'), response: { 200: eventSchema, ...errorResponses } },
  }, async (req) => {
    const event = events.get(req.params.id);
    if (!event) throw new ApiError(404, 'notFound', `Event ${req.params.id} not found`);
    return eventJson(event);
  });

  app.post<{ Body: Record<string, unknown> }>('/events', {
    schema: {
      tags: TAGS,
      summary: 'Create an event',
      body: {
        type: 'object',
        required: ['message', 'component'],
        properties: {
          message: str, component: str, description: str, runId: str, configurationId: str,
          type: { type: 'string', enum: ['info', 'success', 'warn', 'error'] },
          params: freeObject, results: freeObject,
        },
      },
      response: { 201: { type: 'object', properties: { id: str, uuid: str } }, ...errorResponses },
    },
  }, async (req, reply) => {
    const b = req.body as { message: string; component: string; type?: StorageEvent['type'] } & Partial<StorageEvent>;
    const [event] = events.record([{ ...b, type: b.type ?? 'info' }]);
    return reply.status(201).send({ id: event.id, uuid: event.uuid });
  });
};

/** A non-negative integer query parameter as a string, undefined when absent. */
function integer(raw: string | undefined, key: string): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw)) throw new StorageValidationError('storage.validation', [{ key, message: 'This value should be a non-negative integer.' }]);
  return raw;
}
