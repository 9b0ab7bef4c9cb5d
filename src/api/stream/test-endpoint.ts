import type { FastifyPluginAsync } from 'fastify';
import type { Project } from '../../storage/project.js';
import type { SourceService } from '../../definition/sources.js';
import type { SinkService } from '../../definition/sinks.js';
import type { MappingCache } from '../../pipeline/mapping-cache.js';
import { ApiError } from '../../http/errors.js';
import { acceptsSignal, SIGNALS, type Signal } from '../../model/definition.js';
import { createRecordContext, MappingError, testEndpointIp } from '../../pipeline/columns/index.js';
import { headersFromRaw, TEST_ENDPOINT_OMITTED_HEADERS } from '../../pipeline/headers.js';
import { looseObject } from './schemas.js';
import { requireToken } from '../auth.js';
import { requireSourceRead } from './source-scopes.js';
import { FILTERED } from '../../pipeline/row-mapping.js';
import type { TestAnswer, TestTable } from '../../contract/failures.js';

type Params = { branchId: string; sourceId: string };

export interface TestEndpointRoutesOptions {
  project: Project;
  sources: SourceService;
  sinks: SinkService;
  mappings: Pick<MappingCache, 'get'>;
}

/**
 * POST .../sources/{sourceId}/test: renders the raw payload through every sink mapping of the
 * source, exactly as ingestion would, and stores nothing. A sink whose filter skips the record
 * answers no row and `filtered: true` (a Sluice addition: without filters the answer is the
 * reference's); a filter that fails is a 422 like a column's failure. Any token with read on the buckets of
 * all the source's sinks may call it (it writes nothing, so the hook's master-only rule for
 * writes does not apply). The body is taken as raw bytes whatever its content type, so this
 * plugin has its own catch-all body parser.
 */
export const testEndpointRoutes: FastifyPluginAsync<TestEndpointRoutesOptions> = async (app, { project, sources, sinks, mappings }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.post<{ Params: Params; Querystring: { signal?: string } }>('/branches/:branchId/sources/:sourceId/test', {
    schema: {
      tags: ['sources'],
      summary: 'Render a sample payload through every sink mapping of the source; nothing is stored',
      description: 'Any token with read on the buckets of all the source\'s sinks (403 otherwise).',
      querystring: { type: 'object', properties: { signal: { type: 'string', enum: SIGNALS, description: 'OTLP sources: the routing signal (default logs)' } } },
      response: { 200: looseObject('TestResult') },
    },
  }, async (req): Promise<TestAnswer> => {
    const branchId = project.resolveBranch(req.params.branchId);
    const source = sources.get(branchId, req.params.sourceId);
    const sourceSinks = sinks.list(branchId, source.sourceId, false);
    // The answer shows what every sink would write: read on all their buckets, checked first.
    requireSourceRead(requireToken(req), source.sourceId, sourceSinks, 'test the mappings of');
    const signal: Signal | '' = source.type === 'otlp' ? ((req.query.signal as Signal | undefined) ?? 'logs') : '';
    const headers = headersFromRaw(req.raw.rawHeaders, TEST_ENDPOINT_OMITTED_HEADERS);
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const ctx = createRecordContext({ receivedAt: new Date(), ip: testEndpointIp(headers, req.socket.remoteAddress), headers, body, signal });

    // Disabled sinks are rendered too, as in the reference; signal filters apply to OTLP only.
    const targets = sourceSinks.filter((s) => acceptsSignal(s, signal));
    const rendered = await Promise.all(
      targets.map(async (sink): Promise<TestTable> => {
        const mapping = await mappings.get(sink);
        const values = await mapping.render(ctx).catch((err: unknown) => {
          if (err instanceof MappingError) throw new ApiError(422, 'unprocessableContent', err.message);
          throw err;
        });
        if (values === FILTERED) return { sinkId: sink.sinkId, tableId: sink.table.tableId, rows: [], filtered: true };
        return {
          sinkId: sink.sinkId,
          tableId: sink.table.tableId,
          rows: [{ columns: mapping.columnNames.map((name, i) => ({ name, value: values[i] })) }],
        };
      }),
    );
    return { projectId: project.id, branchId, sourceId: source.sourceId, tables: rendered };
  });
};
