import type { FastifyPluginAsync } from 'fastify';
import type { Project } from '../../storage/project.js';
import type { SourceService } from '../../definition/sources.js';
import type { SinkService } from '../../definition/sinks.js';
import type { StreamRuntime } from '../../actors/stream-runtime.js';
import type { StatisticsService } from '../../levels/statistics.js';
import type { MappingFailures } from '../../levels/mapping-failures.js';
import { paginate } from '../../definition/repository.js';
import { sinkView, sourceView, type SourceViewConfig } from './views.js';
import { showsSourceSecret } from './source-scopes.js';
import { requireToken } from '../auth.js';
import { looseObject } from './schemas.js';
import { pagingQuerySchema, parseBool, parseLimit, type PagingQuery } from './params.js';
import type { QuotaStatus } from '../../sources/ingest/source-quotas.js';
import type { AggregatedSourcesAnswer, SinkFilesAnswer, SinkStatisticsHistoryAnswer, SinkStatisticsTotalAnswer } from '../../contract/statistics.js';
import type { StatisticsHistory } from '../../levels/statistics-history.js';

type SourceParams = { branchId: string; sourceId: string };
type SinkParams = SourceParams & { sinkId: string };
const tags = ['statistics'];

export interface StatisticsRoutesOptions {
  project: Project;
  sources: SourceService;
  sinks: SinkService;
  statistics: StatisticsService;
  failures: Pick<MappingFailures, 'count'>;
  runtime: Pick<StreamRuntime, 'settled' | 'started' | 'failingOf'>;
  config: SourceViewConfig;
  /** The sources' quotas on this node, shown in their views (none: no quota shown). */
  quotas?: QuotaStatus;
  /** The sinks' recent statistics on this node (GET .../statistics/history; none: an empty history). */
  statisticsHistory?: Pick<StatisticsHistory, 'points' | 'clear' | 'intervalMs'>;
}

/** Statistics of sinks (total, files, clear) and the aggregation endpoint of the UI. */
export const statisticsRoutes: FastifyPluginAsync<StatisticsRoutesOptions> = async (app, { project, sources, sinks, statistics, failures, runtime, config, quotas, statisticsHistory }) => {

  app.get<{ Params: SinkParams }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/statistics/history', {
    schema: { tags, summary: 'Samples of the sink\'s totals over the last hours, kept by the node that answers (Sluice\'s addition)', response: { 200: looseObject('SinkStatisticsHistory') } },
  }, async (req): Promise<SinkStatisticsHistoryAnswer> => {
    const branchId = project.resolveBranch(req.params.branchId);
    sinks.get(branchId, req.params.sourceId, req.params.sinkId);
    return {
      intervalSeconds: (statisticsHistory?.intervalMs ?? 30_000) / 1000,
      points: [...(statisticsHistory?.points(branchId, req.params.sourceId, req.params.sinkId) ?? [])],
    };
  });

  app.get<{ Params: SinkParams }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/statistics/total', {
    schema: { tags, summary: 'Record counts and sizes of a sink, in total and per storage level', response: { 200: looseObject('SinkStatisticsTotalResult') } },
  }, async (req): Promise<SinkStatisticsTotalAnswer> => {
    const branchId = project.resolveBranch(req.params.branchId);
    sinks.get(branchId, req.params.sourceId, req.params.sinkId);
    // What finished tasks changed is applied first (a sink just created has its writing file).
    await runtime.settled();
    const total = statistics.sinkTotal(branchId, req.params.sourceId, req.params.sinkId);
    // Sluice's addition, only when there is something to say: the reference's answer (which its
    // clients and the conformance suite compare key by key) stays as it is for a sink without.
    const failed = failures.count({ branchId, sourceId: req.params.sourceId, sinkId: req.params.sinkId });
    // Likewise the records its filter skipped (none without a filter).
    const filtered = statistics.sinkFiltered(branchId, req.params.sourceId, req.params.sinkId);
    // Likewise while the sink is failing on this node (its writes kept failing: actors/sink-health.ts).
    const failing = runtime.started ? runtime.failingOf(req.params) : undefined;
    return {
      ...total,
      ...(failed > 0 ? { mappingFailures: { count: failed } } : {}),
      ...(filtered > 0 ? { filtered: { count: filtered } } : {}),
      ...(failing ? { failing: { reason: failing.reason, since: failing.since, retryAfter: new Date(failing.retryAt).toISOString() } } : {}),
    };
  });

  app.get<{ Params: SinkParams; Querystring: { failedFiles?: string } }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/statistics/files', {
    schema: {
      tags,
      summary: 'Files of a sink with their states and statistics',
      querystring: { type: 'object', properties: { failedFiles: { type: 'string', description: 'true: only files whose import failed' } } },
      response: { 200: looseObject('SinkStatisticsFilesResult') },
    },
  }, async (req): Promise<SinkFilesAnswer> => {
    const branchId = project.resolveBranch(req.params.branchId);
    sinks.get(branchId, req.params.sourceId, req.params.sinkId);
    // What finished tasks changed is applied first (a sink just created has its writing file).
    await runtime.settled();
    const failedOnly = parseBool('failedFiles', req.query.failedFiles);
    return { files: statistics.sinkFiles(branchId, req.params.sourceId, req.params.sinkId, failedOnly) };
  });

  app.delete<{ Params: SinkParams }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/statistics/clear', {
    schema: { tags, summary: 'Reset the statistics of a sink' },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    sinks.get(branchId, req.params.sourceId, req.params.sinkId);
    // What finished tasks changed is applied first (a sink just created has its writing file).
    await runtime.settled();
    statistics.clear(branchId, req.params.sourceId, req.params.sinkId);
    statisticsHistory?.clear(branchId, req.params.sourceId, req.params.sinkId);
    return reply.status(200).send();
  });

  app.delete<{ Params: SourceParams }>('/branches/:branchId/sources/:sourceId/statistics/clear', {
    schema: { tags, summary: 'Reset the statistics of every sink of a source' },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    sources.get(branchId, req.params.sourceId);
    await runtime.settled();
    statistics.clear(branchId, req.params.sourceId);
    statisticsHistory?.clear(branchId, req.params.sourceId);
    return reply.status(200).send();
  });

  app.get<{ Params: { branchId: string }; Querystring: PagingQuery }>('/branches/:branchId/aggregation/sources', {
    schema: { tags, summary: 'Sources with their sinks and the sinks\' statistics (for UIs)', querystring: pagingQuerySchema, response: { 200: looseObject('AggregatedSourcesResult') } },
  }, async (req): Promise<AggregatedSourcesAnswer> => {
    const token = requireToken(req);
    const branchId = project.resolveBranch(req.params.branchId);
    const limit = parseLimit(req.query.limit);
    await runtime.settled();
    const { items, page } = paginate(sources.list(branchId, false), (s) => s.sourceId, req.query.afterId ?? '', limit);
    return {
      projectId: project.id,
      branchId,
      page,
      sources: items.map((source) => {
        const sourceSinks = sinks.list(branchId, source.sourceId, false);
        return {
          ...sourceView(source, config, showsSourceSecret(token, sourceSinks), quotas?.quotaOf(source)),
          sinks: sourceSinks.map((sink) => ({
            ...sinkView(sink),
            statistics: {
              ...statistics.sinkTotal(branchId, sink.sourceId, sink.sinkId),
              // As the reference: the sink's 50 latest files, newest first.
              files: statistics.recentFiles(branchId, sink.sourceId, sink.sinkId),
            },
          })),
        };
      }),
    };
  });
};
