import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import type { IngestSources } from '../../sources/http/index.js';
import { requireToken } from '../auth.js';
import { paginate } from '../../definition/repository.js';
import type { SourceCreate, SourceService, SourceUpdate } from '../../definition/sources.js';
import type { SinkService } from '../../definition/sinks.js';
import type { Source } from '../../model/definition.js';
import type { Token } from '../../storage/token-model.js';
import { seesAllBuckets } from '../../storage/token-scopes.js';
import { showsSourceSecret } from './source-scopes.js';
import { byToken, sourceView, versionView, type SourceViewConfig } from './views.js';
import { looseObject, sourceCreateSchema, sourceUpdateSchema, taskResponse } from './schemas.js';
import { pagingQuerySchema, parseBool, parseLimit, parseVersionNumber, versionsPage, type PagingQuery } from './params.js';
import type { SourcesAnswer } from '../../contract/stream-sources.js';
import type { QuotaStatus } from '../../sources/ingest/source-quotas.js';

type BranchParams = { branchId: string };
type SourceParams = BranchParams & { sourceId: string };
type VersionParams = SourceParams & { versionNumber: string };

const tags = ['sources'];
const SECRET_RIGHTS = 'The fields that carry the ingestion secret (http.url, otlp.url, otlp.secret) are answered only to tokens with write on the buckets of all the source\'s sinks.';

export interface SourceRoutesOptions {
  project: Project;
  sources: SourceService;
  /** The sinks of a source decide who sees its secret (source-scopes.ts). */
  sinks: Pick<SinkService, 'list'>;
  /** The ingestion lookup: a rotated secret stops working at once. */
  ingestSources: Pick<IngestSources, 'invalidate'>;
  config: SourceViewConfig & Pick<Config, 'publicApiUrl'>;
  /** The sources' quotas on this node, shown in their views (none: no quota shown). */
  quotas?: QuotaStatus;
}

/** Sources: create, list, get, update, delete, undelete, disable, enable, secret, versions. */
export const sourceRoutes: FastifyPluginAsync<SourceRoutesOptions> = async (app, { project, sources, sinks, ingestSources, config, quotas }) => {
  const api = config.publicApiUrl;
  const by = (req: Parameters<typeof requireToken>[0]) => byToken(requireToken(req));
  /**
   * The source as this token may see it: the secret only with write on all its sinks' buckets.
   * A deleted source has no sinks to judge by: only bucket managers see its secret.
   */
  const view = (token: Token, s: Source) =>
    sourceView(s, config, seesAllBuckets(token) || (!s.deleted && showsSourceSecret(token, sinks.list(s.branchId, s.sourceId, false))), s.deleted ? undefined : quotas?.quotaOf(s));

  app.post<{ Params: BranchParams; Body: SourceCreate }>('/branches/:branchId/sources', {
    schema: { tags, summary: 'Create a source (asynchronous task)', body: sourceCreateSchema, response: taskResponse },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    return reply.status(202).send(sources.create(branchId, req.body, by(req), api));
  });

  app.get<{ Params: BranchParams; Querystring: PagingQuery }>('/branches/:branchId/sources', {
    schema: { tags, summary: 'List sources', description: SECRET_RIGHTS, querystring: pagingQuerySchema, response: { 200: looseObject('SourcesList') } },
  }, async (req) => listSources(requireToken(req), req.params.branchId, req.query, false));

  app.get<{ Params: BranchParams; Querystring: PagingQuery }>('/branches/:branchId/sources/deleted', {
    schema: { tags, summary: 'List deleted sources', querystring: pagingQuerySchema, response: { 200: looseObject('SourcesList') } },
  }, async (req) => listSources(requireToken(req), req.params.branchId, req.query, true));

  function listSources(token: Token, branchParam: string, query: PagingQuery, deleted: boolean): SourcesAnswer {
    const branchId = project.resolveBranch(branchParam);
    const limit = parseLimit(query.limit);
    const { items, page } = paginate(sources.list(branchId, deleted), (s) => s.sourceId, query.afterId ?? '', limit);
    return { projectId: project.id, branchId, page, sources: items.map((s) => view(token, s)) };
  }

  app.get<{ Params: SourceParams }>('/branches/:branchId/sources/:sourceId', {
    schema: { tags, summary: 'Get a source', description: SECRET_RIGHTS, response: { 200: looseObject('Source') } },
  }, async (req) => view(requireToken(req), sources.get(project.resolveBranch(req.params.branchId), req.params.sourceId)));

  app.patch<{ Params: SourceParams; Body: SourceUpdate }>('/branches/:branchId/sources/:sourceId', {
    schema: { tags, summary: 'Update a source (asynchronous task); sinks are not touched', body: sourceUpdateSchema, response: taskResponse },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    return reply.status(202).send(sources.update(branchId, req.params.sourceId, req.body ?? {}, by(req), api));
  });

  app.delete<{ Params: SourceParams; Querystring: { cascade?: string } }>('/branches/:branchId/sources/:sourceId', {
    schema: {
      tags,
      summary: 'Delete a source (asynchronous task): soft delete, or with cascade=true its sinks, tables and bucket for good',
      querystring: { type: 'object', properties: { cascade: { type: 'string' } } },
      response: taskResponse,
    },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    const cascade = parseBool('cascade', req.query.cascade);
    return reply.status(202).send(sources.delete(branchId, req.params.sourceId, cascade, by(req), api));
  });

  app.put<{ Params: SourceParams }>('/branches/:branchId/sources/:sourceId/undelete', {
    schema: { tags, summary: 'Restore a deleted source (asynchronous task)', response: taskResponse },
  }, async (req, reply) => reply.status(202).send(sources.undelete(project.resolveBranch(req.params.branchId), req.params.sourceId, by(req), api)));

  app.put<{ Params: SourceParams }>('/branches/:branchId/sources/:sourceId/disable', {
    schema: { tags, summary: 'Disable a source (asynchronous task)', response: taskResponse },
  }, async (req, reply) => reply.status(202).send(sources.disable(project.resolveBranch(req.params.branchId), req.params.sourceId, by(req), api)));

  app.put<{ Params: SourceParams }>('/branches/:branchId/sources/:sourceId/enable', {
    schema: { tags, summary: 'Enable a source (asynchronous task)', response: taskResponse },
  }, async (req, reply) => reply.status(202).send(sources.enable(project.resolveBranch(req.params.branchId), req.params.sourceId, by(req), api)));

  app.post<{ Params: SourceParams }>('/branches/:branchId/sources/:sourceId/rotate-secret', {
    schema: { tags, summary: 'Generate a new ingestion secret; the old one stops working at once', response: { 200: looseObject('Source') } },
  }, async (req) => {
    const rotated = sources.rotateSecret(project.resolveBranch(req.params.branchId), req.params.sourceId, by(req));
    ingestSources.invalidate(); // the old secret stops working at once
    return view(requireToken(req), rotated);
  });

  app.get<{ Params: SourceParams; Querystring: PagingQuery }>('/branches/:branchId/sources/:sourceId/versions', {
    schema: { tags, summary: 'List versions of a source', querystring: pagingQuerySchema, response: { 200: looseObject('EntityVersions') } },
  }, async (req) => {
    const branchId = project.resolveBranch(req.params.branchId);
    sources.get(branchId, req.params.sourceId);
    return versionsPage(sources.versions(branchId, req.params.sourceId).map((s) => s.version), req.query);
  });

  app.get<{ Params: VersionParams }>('/branches/:branchId/sources/:sourceId/versions/:versionNumber', {
    schema: { tags, summary: 'Get a version of a source', response: { 200: looseObject('Version') } },
  }, async (req) => {
    const branchId = project.resolveBranch(req.params.branchId);
    const n = parseVersionNumber(req.params.versionNumber);
    sources.get(branchId, req.params.sourceId);
    return versionView(sources.version(branchId, req.params.sourceId, n).version);
  });

  app.put<{ Params: VersionParams }>('/branches/:branchId/sources/:sourceId/versions/:versionNumber/rollback', {
    schema: { tags, summary: 'Roll a source back to a version (asynchronous task)', response: taskResponse },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    const n = parseVersionNumber(req.params.versionNumber);
    return reply.status(202).send(sources.rollback(branchId, req.params.sourceId, n, by(req), api));
  });
};
