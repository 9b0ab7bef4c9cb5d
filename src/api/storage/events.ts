import type { FastifyPluginAsync } from 'fastify';
import type { Project } from '../../storage/project.js';
import type { EventService, NewEvent, StorageEvent } from '../../storage/events.js';
import type { JobService } from '../../queue/job-service.js';
import type { Token } from '../../storage/token-model.js';
import { canReadComponent, canWriteComponent } from '../../storage/configurations/permissions.js';
import { ApiError } from '../../http/errors.js';
import { requireToken } from '../auth.js';
import { accessDenied, StorageValidationError } from './envelope.js';
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
    token: { type: 'object', properties: { id: str, name: str } },
  },
} as const;

/** The component of the job runner's own lines in a job's log: no token may post as it. */
const JOB_RUNNER = 'job-runner';

interface ListQuery {
  runId?: string; component?: string; configurationId?: string; sinceId?: string; maxId?: string; q?: string;
  limit?: string; offset?: string; sortOrder?: string;
}

const eventJson = (e: StorageEvent) => ({ ...e, created: storageDate(e.created) });

export interface EventRoutesOptions {
  project: Pick<Project, 'resolveBranch'>;
  events: Pick<EventService, 'list' | 'get' | 'record'>;
  /** A job's events are seen by the tokens that may see the job (its component). */
  jobs: Pick<JobService, 'byRunId'>;
}

/**
 * Which events a token sees (undefined: all of them): those of the components it has access to
 * (a job's events, runner lines included, by the job's component).
 */
function visibleEvents(token: Token, jobs: Pick<JobService, 'byRunId'>): ((e: StorageEvent) => boolean) | undefined {
  if (token.isMasterToken || token.canManageBuckets) return undefined;
  const componentOfRun = new Map<string, string | undefined>();
  return (e) => {
    if (e.runId) {
      if (!componentOfRun.has(e.runId)) componentOfRun.set(e.runId, jobs.byRunId(e.runId)?.component);
      const jobComponent = componentOfRun.get(e.runId);
      if (jobComponent !== undefined) return canReadComponent(token, jobComponent);
    }
    return canReadComponent(token, e.component);
  };
}

/**
 * Storage events: the job log. Registered under /v2/storage and /branch/{branchId}.
 * A token lists and reads only the events it may see (visibleEvents); an event it posts carries
 * the token, may claim only a component the token may use, never the job runner, and joins only
 * the log of a job the token may see.
 */
export const eventRoutes: FastifyPluginAsync<EventRoutesOptions> = async (app, { project, events, jobs }) => {
  app.addHook('onRequest', async (req) => {
    const { branchId } = req.params as { branchId?: string };
    if (branchId !== undefined) project.resolveBranch(branchId);
  });

  app.get<{ Querystring: ListQuery }>('/events', {
    schema: {
      tags: TAGS,
      summary: 'List events, newest first',
      description: 'Filters: runId, component, configurationId, sinceId, maxId, q; paging: limit (default 100, max 10000), offset, sortOrder (desc|asc). ' +
        'Only the events of components the token has access to (a job\'s by the job\'s component).',
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
      visible: visibleEvents(requireToken(req), jobs),
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
    const visible = visibleEvents(requireToken(req), jobs);
    if (!event || (visible && !visible(event))) throw new ApiError(404, 'notFound', `Event ${req.params.id} not found`);
    return eventJson(event);
  });

  app.post<{ Body: Record<string, unknown> }>('/events', {
    schema: {
      tags: TAGS,
      summary: 'Create an event',
      description: 'Attributed to the token (token: {id, name}). The component must be one the token may write, not job-runner; a runId must be a job the token may see (403 otherwise; the master token may name any run).',
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
    const token = requireToken(req);
    const b = req.body as Pick<StorageEvent, 'message' | 'component'> & Partial<Pick<StorageEvent, 'type' | 'description' | 'runId' | 'configurationId' | 'params' | 'results'>>;
    checkClaims(token, b, jobs);
    // Only the fields a client may set: the rest (ids, time, the token) is the server's.
    const event: NewEvent = {
      message: b.message,
      component: b.component,
      type: b.type ?? 'info',
      ...(b.description !== undefined ? { description: b.description } : {}),
      ...(b.runId ? { runId: b.runId } : {}),
      ...(b.configurationId !== undefined ? { configurationId: b.configurationId } : {}),
      ...(b.params !== undefined ? { params: b.params } : {}),
      ...(b.results !== undefined ? { results: b.results } : {}),
      token: { id: token.id, name: token.description },
    };
    const [recorded] = events.record([event]);
    return reply.status(201).send({ id: recorded.id, uuid: recorded.uuid });
  });
};

/**
 * What a posted event may claim, checked before anything is stored: a component the token may
 * use (never the job runner's, whose lines only the runner writes) and, with a runId, a job the
 * token may see. A run id that is no job is refused too (it could name a job still to come), but
 * for the master token, which may do anything a job's log could show and which the reference
 * lets post any run id (an outside system's run).
 */
function checkClaims(token: Token, b: { component: string; runId?: string | null }, jobs: Pick<JobService, 'byRunId'>): void {
  if (b.component === JOB_RUNNER) {
    throw new ApiError(403, 'accessDenied', `The component "${JOB_RUNNER}" is reserved for the job runner's own lines; post the event as another component.`);
  }
  if (!canWriteComponent(token, b.component)) throw accessDenied();
  if (b.runId) {
    const job = jobs.byRunId(b.runId);
    if (job ? !canReadComponent(token, job.component) : !token.isMasterToken) {
      throw new ApiError(403, 'accessDenied', `The run "${b.runId}" is not a job this token may see: an event can only join the log of such a job.`);
    }
  }
}

/** A non-negative integer query parameter as a string, undefined when absent. */
function integer(raw: string | undefined, key: string): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw)) throw new StorageValidationError('storage.validation', [{ key, message: 'This value should be a non-negative integer.' }]);
  return raw;
}
