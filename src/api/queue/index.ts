import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import type { TokenService } from '../../storage/tokens.js';
import type { JobService } from '../../queue/job-service.js';
import { canReadComponent, canWriteComponent } from '../../storage/configurations/permissions.js';
import type { Token } from '../../storage/token-model.js';
import type { Job } from '../../queue/job-model.js';
import { QueueError, jobNotFound } from '../../queue/errors.js';
import { jobJson } from '../../queue/job-json.js';
import { searchJobs, type SearchQuery } from '../../queue/job-search.js';
import { requireToken, tokenFromRequest } from '../auth.js';
import { queueErrors } from './envelope.js';
import { answerErrorsWith } from '../../http/error-handler.js';

const TAGS = ['job queue'];

const errorSchema = {
  type: 'object',
  description: 'Queue API error',
  properties: {
    error: { type: 'string' },
    code: { type: 'integer' },
    exceptionId: { type: 'string' },
    status: { type: 'string' },
    context: { type: 'object', additionalProperties: true },
  },
} as const;
const errorResponses = { '4xx': errorSchema, '5xx': errorSchema } as const;

/** The job object; listed fields plus anything else as is (configData, result are free-form). */
export const jobSchema = {
  type: 'object',
  additionalProperties: true,
  properties: {
    id: { type: 'string' },
    runId: { type: 'string' },
    status: { type: 'string', enum: ['created', 'waiting', 'processing', 'terminating', 'success', 'error', 'warning', 'terminated', 'cancelled'] },
    desiredStatus: { type: 'string', enum: ['processing', 'terminating'] },
    component: { type: 'string' },
    config: { type: ['string', 'null'] },
    isFinished: { type: 'boolean' },
    url: { type: 'string' },
  },
} as const;

const jobParams = { type: 'object', required: ['jobId'], properties: { jobId: { type: 'string' } } } as const;

export interface QueueApiOptions {
  tokens: Pick<TokenService, 'authenticateCaughtUp'>;
  jobs: Pick<JobService, 'create' | 'require' | 'kill' | 'all'>;
  /** The jobs' public URL; whether this node runs jobs (its roles). */
  config: Pick<Config, 'publicQueueUrl' | 'projectId' | 'roles'>;
}

/**
 * The Job Queue API: POST /jobs, GET /jobs/{jobId}, GET /search/jobs (and the
 * deprecated GET /jobs), POST /jobs/{jobId}/kill. Served on the API's listener; its public base
 * URL (job `url`) is SLUICE_PUBLIC_QUEUE_URL. Errors use the Queue envelope.
 */
export const queueApi: FastifyPluginAsync<QueueApiOptions> = async (app, { tokens, jobs, config }) => {
  answerErrorsWith(app, queueErrors);
  app.addHook('onRequest', async (req: FastifyRequest) => {
    const secret = tokenFromRequest(req);
    const token = secret === undefined ? undefined : await tokens.authenticateCaughtUp(secret);
    if (!token) throw new QueueError('unauthorized', 'Invalid access token');
    req.token = token;
  });
  const ctx = { queueUrl: config.publicQueueUrl, projectId: config.projectId };
  const show = (job: Parameters<typeof jobJson>[0]) => jobJson(job, ctx);
  /**
   * A job the token may see: one of a component it has access to. Any other job
   * is answered as missing, as the filtered lists do not show it either: its existence (ids are
   * sequential) and component stay hidden.
   */
  const visibleJob = (token: Token, jobId: string): Job => {
    const job = jobs.require(jobId);
    if (!canReadComponent(token, job.component)) throw jobNotFound(jobId);
    return job;
  };

  app.post('/jobs', {
    schema: {
      tags: TAGS,
      summary: 'Create a job',
      description: 'JSON body: component (required), config or configData, mode (run|forceRun|debug), configRowIds, tag, ' +
        'branchId, variableValuesId or variableValuesData {values:[{name,value}]}. Optional header X-KBC-RunId: parent run id.',
      response: { 201: jobSchema, ...errorResponses },
    },
  }, async (req, reply) => {
    const token = requireToken(req);
    // Jobs run where they are created (the queue is node-local): a node without workers would keep them waiting forever.
    if (!config.roles.has('jobs')) throw new QueueError('unavailable', 'This node does not run jobs (its --roles has no "jobs"): create the job on a node that does.');
    const body = req.body as { component?: unknown } | undefined;
    if (body && typeof body.component === 'string' && !canWriteComponent(token, body.component)) {
      throw new QueueError('forbidden', "You don't have access to the resource.");
    }
    const parent = req.headers['x-kbc-runid'];
    const job = jobs.create(req.body, token, typeof parent === 'string' ? parent : '');
    return reply.status(201).send(show(job));
  });

  app.get<{ Params: { jobId: string } }>('/jobs/:jobId', {
    schema: { tags: TAGS, summary: 'Job detail (poll it to follow progress)', params: jobParams, response: { 200: jobSchema, ...errorResponses } },
  }, async (req) => show(visibleJob(requireToken(req), req.params.jobId)));

  app.post<{ Params: { jobId: string } }>('/jobs/:jobId/kill', {
    schema: {
      tags: TAGS,
      summary: 'Kill a job',
      description: 'A created or waiting job is cancelled; a processing job becomes terminating, then terminated.',
      params: jobParams,
      response: { 202: jobSchema, ...errorResponses },
    },
  }, async (req, reply) => {
    const token = requireToken(req);
    const job = visibleJob(token, req.params.jobId);
    if (!canWriteComponent(token, job.component)) throw new QueueError('forbidden', "You don't have access to the resource.");
    return reply.status(202).send(show(jobs.kill(job.id)));
  });

  const search = {
    schema: {
      tags: TAGS,
      summary: 'Search jobs',
      description: 'Filters (each may repeat as x[]): id, runId, branchId, tokenId, tokenDescription, component/componentId, ' +
        'config/configId, configRowIds, mode, status, type, parentRunId, createdTimeFrom/To, startTimeFrom/To, endTimeFrom/To, ' +
        'durationSecondsFrom/To; offset (0), limit (100), sortBy (id), sortOrder (desc). Only jobs of components the token has access to.',
      response: { 200: { type: 'array', items: jobSchema }, ...errorResponses },
    },
  };
  // Filtered before the search pages them: a page holds only jobs the token may see.
  const handler = async (req: FastifyRequest) => {
    const token = requireToken(req);
    const visible = jobs.all().filter((job) => canReadComponent(token, job.component));
    return searchJobs(visible, req.query as SearchQuery).map(show);
  };
  app.get('/search/jobs', search, handler);
  app.get('/jobs', { schema: { ...search.schema, summary: 'List jobs (deprecated; same as /search/jobs)' } }, handler);
};
