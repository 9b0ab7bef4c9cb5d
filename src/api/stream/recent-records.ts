import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../http/errors.js';
import { partitionIdOf } from '../../ports/event-log.js';
import { newestFirst, partitionsOf, take, type PartitionRecord, type SourceRecordRoutesOptions } from './source-log.js';
import { toFailureRecord } from '../../levels/mapping-failures.js';
import { looseObject } from './schemas.js';
import { requireToken } from '../auth.js';
import { RAW_RECORDS_RIGHTS, requireSourceRead } from './source-scopes.js';
import { recordView } from './views.js';
import type { RecentRecordsAnswer } from '../../contract/failures.js';

type Params = { branchId: string; sourceId: string };

const MAX_LIMIT = 20;
const DEFAULT_LIMIT = 5;

export type RecentRecordRoutesOptions = SourceRecordRoutesOptions;

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
    const partitions = partitionsOf(config);
    const found: PartitionRecord[] = [];
    for (let partition = 0; partition < partitions; partition++) {
      const newest = await take(newestFirst(eventLog, partitionIdOf(topic, partition), limit), limit);
      found.push(...newest.map((logged) => ({ partition, logged })));
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
