import type { FastifyPluginAsync } from 'fastify';
import type { Project } from '../../storage/project.js';
import type { SinkService } from '../../definition/sinks.js';
import type { StreamRuntime } from '../../actors/stream-runtime.js';
import type { MappingFailures } from '../../levels/mapping-failures.js';
import { ApiError } from '../../http/errors.js';
import { SinkNotAvailableError } from '../../actors/sink-recovery.js';
import { OrderFailedError } from '../../actors/cluster-orders.js';
import { looseObject } from './schemas.js';
import { requireToken } from '../auth.js';
import { RAW_RECORDS_RIGHTS, requireSourceRead, requireSourceWrite } from './source-scopes.js';
import { recordView } from './views.js';
import type { MappingFailuresAnswer, ReprocessResult } from '../../contract/failures.js';

type SinkParams = { branchId: string; sourceId: string; sinkId: string };
const tags = ['sinks'];

export interface FailureRoutesOptions {
  project: Project;
  sinks: SinkService;
  failures: Pick<MappingFailures, 'count' | 'recent'>;
  runtime: Pick<StreamRuntime, 'reconcile' | 'reprocessFailures'>;
}

/**
 * Records a sink could not map (missing Body path, template error): how many are failed now,
 * the most recent ones with their reason and raw record, and a replay through the sink's current
 * mapping. Sluice's own endpoints: the reference has no equivalent.
 */
export const failureRoutes: FastifyPluginAsync<FailureRoutesOptions> = async (app, { project, sinks, failures, runtime }) => {

  app.get<{ Params: SinkParams; Querystring: { limit?: string } }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/failures', {
    schema: {
      tags,
      summary: 'Records the sink could not map: how many are failed now (not written since) and the most recent ones with reason and raw record',
      description: RAW_RECORDS_RIGHTS,
      querystring: { type: 'object', properties: { limit: { type: 'string', description: 'How many recent failures (1 to 1000, default 100).' } } },
      response: { 200: looseObject('MappingFailures') },
    },
  }, async (req): Promise<MappingFailuresAnswer> => {
    const branchId = project.resolveBranch(req.params.branchId);
    const sink = sinks.get(branchId, req.params.sourceId, req.params.sinkId);
    // A failure is the source's raw record: the same right as the source's records.
    requireSourceRead(requireToken(req), sink.sourceId, sinks.list(branchId, sink.sourceId, false), 'read the mapping failures of');
    const raw = req.query.limit ?? '100';
    const limit = Number(raw);
    if (!/^\d+$/.test(raw) || limit < 1 || limit > 1000) throw new ApiError(400, 'invalidRange', `Limit must be between 1 and 1000, got "${raw}".`);
    const key = { branchId, sourceId: sink.sourceId, sinkId: sink.sinkId };
    // Both cover every partition instance of the sink (one writer per partition of its topic).
    // `count` is every record failed now; the list the newest `limit` of the 1000 kept per
    // instance: with fewer failed records than `limit`, count equals the list's length.
    return { count: failures.count(key), failures: failures.recent(key, limit).map((f) => ({ ...f, record: recordView(f.record) })) };
  });

  app.post<{ Params: SinkParams }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/failures/reprocess', {
    schema: {
      tags,
      summary: 'Map the kept failed records again with the sink\'s current mapping; those that map now are written to the sink',
      response: { 200: looseObject('ReprocessResult') },
    },
  }, async (req): Promise<ReprocessResult> => {
    const branchId = project.resolveBranch(req.params.branchId);
    const sink = sinks.get(branchId, req.params.sourceId, req.params.sinkId);
    // Only the master token gets here (streamAuthHook); the rule holds should that ever widen.
    requireSourceWrite(requireToken(req), sink.sourceId, sinks.list(branchId, sink.sourceId, false), 'reprocess the records of');
    if (sink.disabled) throw new ApiError(409, 'sinkDisabled', `Sink "${sink.sinkId}" is disabled: enable it before reprocessing its failed records.`);
    await runtime.reconcile();
    try {
      return await runtime.reprocessFailures(sink);
    } catch (err) {
      // Cluster mode: a partition is moving, or its owner failed or went away. The partitions that answered have reprocessed theirs; a new call takes what is left.
      if (err instanceof SinkNotAvailableError || err instanceof OrderFailedError) throw new ApiError(503, 'sinkNotAvailable', err.message);
      throw err;
    }
  });
};
