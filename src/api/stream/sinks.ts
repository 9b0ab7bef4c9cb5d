import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import { requireToken } from '../auth.js';
import { ApiError } from '../../http/errors.js';
import { paginate } from '../../definition/repository.js';
import type { SinkCreate, SinkService, SinkUpdate } from '../../definition/sinks.js';
import { byToken, sinkView, versionView } from './views.js';
import { looseObject, sinkCreateSchema, sinkUpdateSchema, taskResponse } from './schemas.js';
import { pagingQuerySchema, parseLimit, parseVersionNumber, versionsPage, type PagingQuery } from './params.js';
import type { SinksAnswer } from '../../contract/stream-sources.js';

type SourceParams = { branchId: string; sourceId: string };
type SinkParams = SourceParams & { sinkId: string };
type VersionParams = SinkParams & { versionNumber: string };

const tags = ['sinks'];
const SINKS = '/branches/:branchId/sources/:sourceId/sinks';
const SINK = `${SINKS}/:sinkId`;

export interface SinkRoutesOptions {
  project: Project;
  sinks: SinkService;
  config: Pick<Config, 'publicApiUrl'>;
}

/** Sinks of a source: create, list, get, update, delete, undelete, disable, enable, versions. */
export const sinkRoutes: FastifyPluginAsync<SinkRoutesOptions> = async (app, { project, sinks, config }) => {
  const api = config.publicApiUrl;
  const by = (req: Parameters<typeof requireToken>[0]) => byToken(requireToken(req));

  app.post<{ Params: SourceParams; Body: SinkCreate }>(SINKS, {
    schema: { tags, summary: 'Create a sink (asynchronous task); its table is created unless it exists and matches', body: sinkCreateSchema, response: taskResponse },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    if (!req.body.table) throw new ApiError(400, 'missingField', '"table" is missing from body.');
    return reply.status(202).send(await sinks.create(branchId, req.params.sourceId, req.body, by(req), api));
  });

  app.get<{ Params: SourceParams; Querystring: PagingQuery }>(SINKS, {
    schema: { tags, summary: 'List sinks of a source', querystring: pagingQuerySchema, response: { 200: looseObject('SinksList') } },
  }, async (req) => listSinks(req.params, req.query, false));

  app.get<{ Params: SourceParams; Querystring: PagingQuery }>(`${SINKS}/deleted`, {
    schema: { tags, summary: 'List deleted sinks of a source', querystring: pagingQuerySchema, response: { 200: looseObject('SinksList') } },
  }, async (req) => listSinks(req.params, req.query, true));

  function listSinks(params: SourceParams, query: PagingQuery, deleted: boolean): SinksAnswer {
    const branchId = project.resolveBranch(params.branchId);
    const limit = parseLimit(query.limit);
    const { items, page } = paginate(sinks.list(branchId, params.sourceId, deleted), (s) => s.sinkId, query.afterId ?? '', limit);
    return { projectId: project.id, branchId, sourceId: params.sourceId, page, sinks: items.map(sinkView) };
  }

  app.get<{ Params: SinkParams }>(SINK, {
    schema: { tags, summary: 'Get a sink', response: { 200: looseObject('Sink') } },
  }, async (req) => sinkView(sinks.get(project.resolveBranch(req.params.branchId), req.params.sourceId, req.params.sinkId)));

  app.patch<{ Params: SinkParams; Body: SinkUpdate }>(SINK, {
    schema: { tags, summary: 'Update a sink (asynchronous task)', body: sinkUpdateSchema, response: taskResponse },
  }, async (req, reply) => {
    const { sourceId, sinkId } = req.params;
    const branchId = project.resolveBranch(req.params.branchId);
    return reply.status(202).send(await sinks.update(branchId, sourceId, sinkId, req.body ?? {}, by(req), api));
  });

  app.delete<{ Params: SinkParams }>(SINK, {
    schema: { tags, summary: 'Delete a sink (asynchronous task, restorable)', response: taskResponse },
  }, async (req, reply) => {
    const { sourceId, sinkId } = req.params;
    return reply.status(202).send(sinks.delete(project.resolveBranch(req.params.branchId), sourceId, sinkId, by(req), api));
  });

  app.put<{ Params: SinkParams }>(`${SINK}/undelete`, {
    schema: { tags, summary: 'Restore a deleted sink (asynchronous task)', response: taskResponse },
  }, async (req, reply) => {
    const { sourceId, sinkId } = req.params;
    return reply.status(202).send(sinks.undelete(project.resolveBranch(req.params.branchId), sourceId, sinkId, by(req), api));
  });

  app.put<{ Params: SinkParams }>(`${SINK}/disable`, {
    schema: { tags, summary: 'Disable a sink (asynchronous task); its token is deleted', response: taskResponse },
  }, async (req, reply) => {
    const { sourceId, sinkId } = req.params;
    return reply.status(202).send(sinks.disable(project.resolveBranch(req.params.branchId), sourceId, sinkId, by(req), api));
  });

  app.put<{ Params: SinkParams }>(`${SINK}/enable`, {
    schema: { tags, summary: 'Enable a sink (asynchronous task); a new token is created', response: taskResponse },
  }, async (req, reply) => {
    const { sourceId, sinkId } = req.params;
    return reply.status(202).send(sinks.enable(project.resolveBranch(req.params.branchId), sourceId, sinkId, by(req), api));
  });

  app.get<{ Params: SinkParams; Querystring: PagingQuery }>(`${SINK}/versions`, {
    schema: { tags, summary: 'List versions of a sink', querystring: pagingQuerySchema, response: { 200: looseObject('EntityVersions') } },
  }, async (req) => {
    const { sourceId, sinkId } = req.params;
    const branchId = project.resolveBranch(req.params.branchId);
    sinks.get(branchId, sourceId, sinkId);
    return versionsPage(sinks.versions(branchId, sourceId, sinkId).map((s) => s.version), req.query);
  });

  app.get<{ Params: VersionParams }>(`${SINK}/versions/:versionNumber`, {
    schema: { tags, summary: 'Get a version of a sink', response: { 200: looseObject('Version') } },
  }, async (req) => {
    const { sourceId, sinkId } = req.params;
    const branchId = project.resolveBranch(req.params.branchId);
    const n = parseVersionNumber(req.params.versionNumber);
    sinks.get(branchId, sourceId, sinkId);
    return versionView(sinks.version(branchId, sourceId, sinkId, n).version);
  });

  app.put<{ Params: VersionParams }>(`${SINK}/versions/:versionNumber/rollback`, {
    schema: { tags, summary: 'Roll a sink back to a version (asynchronous task)', response: taskResponse },
  }, async (req, reply) => {
    const { sourceId, sinkId } = req.params;
    const branchId = project.resolveBranch(req.params.branchId);
    const n = parseVersionNumber(req.params.versionNumber);
    return reply.status(202).send(await sinks.rollback(branchId, sourceId, sinkId, n, by(req), api));
  });
};
