import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { IngestRecord } from '../../model/record.js';
import { acceptsSignal, SIGNALS } from '../../model/definition.js';
import { createRecordContext, MappingError, type JsonValue } from '../../pipeline/columns/index.js';
import { MappingSampler } from '../../pipeline/inference/index.js';
import { looseObject } from './schemas.js';
import { requireToken } from '../auth.js';
import { RAW_RECORDS_RIGHTS, requireSourceRead } from './source-scopes.js';
import { newestOfTopic, partitionsOf, type SourceRecordRoutesOptions } from './source-log.js';
import type { MappingProposal, MappingProposalBody } from '../../contract/mapping-proposal.js';

type Params = { branchId: string; sourceId: string };

export const MAX_LIMIT = 1000;
export const DEFAULT_LIMIT = 100;
/** Records fetched from the log at a time: a few MB at most with the default body size. */
const CHUNK = 25;
/** Body bytes parsed between two turns of the event loop, so that ingestion on this node goes on meanwhile. */
const BYTES_PER_TURN = 256 * 1024;

export const mappingProposalBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, description: `How many of the newest records to sample (default ${DEFAULT_LIMIT}).` },
    signals: { type: 'array', items: { type: 'string', enum: SIGNALS }, maxItems: SIGNALS.length, description: 'OTLP sources: sample only records of these signals (empty: all).' },
  },
} as const;

export type MappingProposalRoutesOptions = SourceRecordRoutesOptions & { config: Pick<Config, 'inferMaxBytes'> };

/**
 * POST .../sources/{sourceId}/sinks/infer (Sluice's own, read-only): a mapping proposed from the
 * source's newest records (the records that GET .../records shows), for the user to edit and
 * save as a sink; nothing is stored. The rules are pipeline/inference/'s. A token needs what
 * reading those records needs (source-scopes.ts; auth.ts lets it POST). Reads at most `limit`
 * records and `--infer-max-bytes` of their bodies, through the EventLog port.
 *
 * The path does not collide with a sink's: no route takes POST on `sinks/{sinkId}`, so a sink
 * with the id "infer" is read, changed and deleted as any other.
 */
export const mappingProposalRoutes: FastifyPluginAsync<MappingProposalRoutesOptions> = async (app, { project, sources, sinks, eventLog, runtime, config }) => {
  app.post<{ Params: Params; Body: MappingProposalBody | undefined }>('/branches/:branchId/sources/:sourceId/sinks/infer', {
    schema: {
      tags: ['sinks'],
      summary: 'Propose a sink mapping (path columns with data types) from the source\'s newest records; nothing is saved (Sluice\'s own)',
      description: `${RAW_RECORDS_RIGHTS} The body is optional.`,
      body: mappingProposalBodySchema,
      response: { 200: looseObject('MappingProposal: {sampledRecords, skippedRecords, limitedByBytes?, columns: [{type, name, path, dataType, rawString?}], fields: [{path, seen, types, column?, note?}], fieldsTruncated?}') },
    },
    // No body (or an empty one) is the empty body: every option at its default.
    preValidation: async (req) => {
      req.body ??= {};
    },
  }, async (req): Promise<MappingProposal> => {
    const branchId = project.resolveBranch(req.params.branchId);
    const source = sources.get(branchId, req.params.sourceId);
    requireSourceRead(requireToken(req), source.sourceId, sinks.list(branchId, source.sourceId, false), 'propose a mapping from the records of');
    const limit = req.body?.limit ?? DEFAULT_LIMIT;
    const wanted = { allowedSignals: req.body?.signals ?? [] };

    const sampler = new MappingSampler();
    let sampled = 0;
    let skipped = 0;
    let bytes = 0;
    let limitedByBytes = false;
    let sinceTurn = 0;
    const records = newestOfTopic(eventLog, runtime.topicOf(source.sourceId), partitionsOf(config), Math.min(limit, CHUNK));
    for await (const { logged } of records) {
      const { record } = logged;
      if (bytes + record.body.length > config.inferMaxBytes) {
        limitedByBytes = true;
        break;
      }
      bytes += record.body.length;
      sinceTurn += record.body.length;
      if (sinceTurn >= BYTES_PER_TURN) {
        sinceTurn = 0;
        await nextTurn();
      }
      sampled++;
      const body = acceptsSignal(wanted, record.signal) ? bodyOf(record) : undefined;
      if (body === undefined || !sampler.add(body)) skipped++;
      if (sampled >= limit) break;
    }
    const { columns, fields, fieldsTruncated } = sampler.propose();
    return {
      projectId: project.id,
      branchId,
      sourceId: source.sourceId,
      sampledRecords: sampled,
      skippedRecords: skipped,
      ...(limitedByBytes ? { limitedByBytes: true as const } : {}),
      columns,
      fields,
      ...(fieldsTruncated ? { fieldsTruncated: true as const } : {}),
    };
  });
};

/**
 * The body as path columns read it (JSON, or a form, by its Content-Type); undefined when it
 * cannot be read: not JSON, or nested so deep that the parser runs out of stack (a RangeError,
 * which the sampling survives: the next body is parsed on an empty stack).
 */
function bodyOf(record: IngestRecord): JsonValue | undefined {
  try {
    return createRecordContext(record).bodyValue([]);
  } catch (err) {
    if (err instanceof MappingError || err instanceof RangeError) return undefined;
    throw err;
  }
}
