/**
 * POST /stream/<projectId>/<sourceId>/<secret>/batch: the endpoint of the Kafka Connect HTTP
 * sink connector (and any client that batches). One request carries many records (JSON array,
 * NDJSON, comma-joined objects: split.ts). Bad records are rejected one by one and counted in a
 * 2xx answer; only a request without a single good record is a 400 (connectors retry any 4xx).
 * Registered inside the HTTP source's plugin (sources/http/routes.ts), whose prefix, body
 * parser, CORS and error envelope it shares.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IngestRecord } from '../../model/record.js';
import { ApiError } from '../../http/errors.js';
import { batchRecords, sinksTooFarBehind, type appendToLog, type LogAppend } from '../ingest/append.js';
import { batchResult, refusalResult, withQuota, type IngestResult } from '../ingest/envelope.js';
import type { IngestTarget } from '../ingest/sources.js';
import { OWN_CORS, type IngestParams } from '../ingest/admission.js';
import { splitBatch } from './split.js';
import type { SourceQuotas } from '../ingest/quota.js';
import type { DecodedBody } from '../ingest/content-encoding.js';

export interface BatchRouteDeps {
  resolveTarget(req: FastifyRequest<{ Params: IngestParams }>): IngestTarget;
  /** The body inflated within `maxBytes` (413 past it, 415 for an unknown encoding). */
  bodyOf(req: FastifyRequest, maxBytes: number): Promise<DecodedBody>;
  answer(reply: FastifyReply, result: IngestResult, verbose: boolean): FastifyReply;
  appendRecords(req: FastifyRequest, target: IngestTarget, records: IngestRecord[]): ReturnType<typeof appendToLog>;
  logAppend: LogAppend;
  projectId: number;
  maxBatchBodyBytes: number;
  quotas: SourceQuotas;
}

export function batchRoute(app: FastifyInstance, deps: BatchRouteDeps): void {
  const { resolveTarget, bodyOf, answer, appendRecords, logAppend, projectId, maxBatchBodyBytes, quotas } = deps;
  app.post<{ Params: IngestParams }>('/:projectId/:sourceId/:secret/batch', { config: OWN_CORS, bodyLimit: maxBatchBodyBytes, logLevel: 'warn' }, async (req, reply) => {
    const target = resolveTarget(req);
    if (sinksTooFarBehind(logAppend, target)) return answer(reply, refusalResult(429, req.id, projectId, target), true);
    const { body, omitHeaders } = await bodyOf(req, maxBatchBodyBytes);
    const batch = splitBatch(body);
    if (batch.records.length === 0) {
      if (batch.rejected.length === 0) throw new ApiError(400, 'emptyBatch', 'The request body holds no records.');
      throw new ApiError(400, 'invalidBatch', `No valid record in the batch (${batch.rejected.length} rejected). First error: record ${batch.rejected[0].index}: ${batch.rejected[0].message}`);
    }
    if (batch.rejected.length > 0) {
      req.log.warn({ sourceId: target.source.sourceId, rejected: batch.rejected.length, first: batch.rejected[0] }, 'batch records rejected');
    }
    // Every record's body is JSON, whatever the request's Content-Type (batchRecords).
    const records = batchRecords(req.raw, new Date(), batch.records.map((r) => r.body), omitHeaders);
    // The records as stored: bodies after decompression.
    let bytes = 0;
    for (const r of records) bytes += r.body.length;
    const quota = withQuota(reply, quotas.take(target, records.length, bytes));
    if (quota) return answer(reply, refusalResult(429, req.id, projectId, target, quota), true);
    const status = await appendRecords(req, target, records);
    if (status === 503 || status === 429) return answer(reply, refusalResult(status, req.id, projectId, target), true);
    return reply.code(status).type('application/json; charset=utf-8').send(batchResult(status, batch));
  });
}
