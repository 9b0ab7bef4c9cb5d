import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import type { SourceService } from '../../definition/sources.js';
import type { SinkService } from '../../definition/sinks.js';
import type { StreamRuntime } from '../../actors/stream-runtime.js';
import { ApiError } from '../../http/errors.js';
import { partitionIdOf, type EventLog, type LoggedRecord } from '../../ports/event-log.js';
import { toFailureRecord } from '../../levels/mapping-failures.js';
import { looseObject } from './schemas.js';
import { requireToken } from '../auth.js';
import { RAW_RECORDS_RIGHTS, requireSourceRead } from './source-scopes.js';
import { recordView } from './views.js';
import type { RecentRecordsAnswer } from '../../contract/failures.js';

type Params = { branchId: string; sourceId: string };

const MAX_LIMIT = 20;
const DEFAULT_LIMIT = 5;

export interface RecentRecordRoutesOptions {
  project: Project;
  sources: SourceService;
  sinks: Pick<SinkService, 'list'>;
  eventLog: Pick<EventLog, 'headOffset' | 'tailOffset' | 'fetch'>;
  runtime: Pick<StreamRuntime, 'topicOf'>;
  config: Pick<Config, 'kafkaBrokers' | 'kafkaPartitions'>;
}

/**
 * GET .../sources/{sourceId}/records?limit=N (Sluice's own, read-only; the console's live
 * preview offers them as samples): the newest records of the source's event log, newest first,
 * each with its offset, receive time, client IP, headers and body (UTF-8 text, or base64 when
 * the body is not valid UTF-8: `bodyEncoding`). A token needs read on the buckets of all the
 * source's sinks (source-scopes.ts); the senders' credential headers are masked and the source's
 * secret is not part of a record. Reads through the EventLog port (`fetch`), so it neither moves
 * nor waits for the sinks' reading.
 */
export const recentRecordRoutes: FastifyPluginAsync<RecentRecordRoutesOptions> = async (app, { project, sources, sinks, eventLog, runtime, config }) => {

  app.get<{ Params: Params; Querystring: { limit?: string } }>('/branches/:branchId/sources/:sourceId/records', {
    schema: {
      tags: ['sources'],
      summary: 'The newest records of the source\'s event log (Sluice\'s own, read-only; samples for the console\'s preview)',
      description: RAW_RECORDS_RIGHTS,
      querystring: { type: 'object', properties: { limit: { type: 'string', description: `How many records (1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT}).` } } },
      response: { 200: looseObject('RecentRecords: {records: [{offset, receivedAt, ip, headers, body, bodyEncoding}]}, newest first') },
    },
  }, async (req): Promise<RecentRecordsAnswer> => {
    const branchId = project.resolveBranch(req.params.branchId);
    const source = sources.get(branchId, req.params.sourceId);
    requireSourceRead(requireToken(req), source.sourceId, sinks.list(branchId, source.sourceId, false), 'read the records of');
    const raw = req.query.limit ?? String(DEFAULT_LIMIT);
    const limit = Number(raw);
    if (!/^\d+$/.test(raw) || limit < 1 || limit > MAX_LIMIT) {
      throw new ApiError(400, 'invalidRange', `Limit must be between 1 and ${MAX_LIMIT}, got "${raw}".`);
    }
    const topic = runtime.topicOf(source.sourceId);
    // With Kafka a topic Sluice created has this many partitions, each its own partition of offsets.
    const partitions = config.kafkaBrokers ? Math.max(1, config.kafkaPartitions) : 1;
    const found: Array<{ partition: number; logged: LoggedRecord }> = [];
    for (let partition = 0; partition < partitions; partition++) {
      const partitionId = partitionIdOf(topic, partition);
      const head = eventLog.headOffset(partitionId);
      if (head <= 0) continue;
      const after = Math.max(eventLog.tailOffset(partitionId) - 1, head - limit, 0);
      const batch = await eventLog.fetch(partitionId, after, limit);
      for (const logged of batch) if (logged.offset <= head) found.push({ partition, logged });
    }
    found.sort((a, b) => b.logged.record.receivedAt.getTime() - a.logged.record.receivedAt.getTime() || b.logged.offset - a.logged.offset);
    return {
      projectId: project.id,
      branchId,
      sourceId: source.sourceId,
      records: found.slice(0, limit).map(({ partition, logged }) => ({
        offset: logged.offset,
        ...(partitions > 1 ? { partition } : {}),
        ...recordView(toFailureRecord(logged.record)),
      })),
    };
  });
};
