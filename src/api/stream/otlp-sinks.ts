import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import type { SourceService } from '../../definition/sources.js';
import type { SinkService } from '../../definition/sinks.js';
import { requireToken } from '../auth.js';
import { ApiError } from '../../http/errors.js';
import { isDomainError } from '../../domain-errors.js';
import { SIGNALS, type Signal } from '../../model/definition.js';
import { defaultBucket, defaultSink } from '../../sources/otlp/default-sinks.js';
import { byToken } from './views.js';
import { looseObject } from './schemas.js';
import type { DefaultSinksAnswer } from '../../contract/stream-sources.js';

type Params = { branchId: string; sourceId: string };
type Body = { bucket?: string; signals?: Signal[] } | null | undefined;

export interface OtlpSinkRoutesOptions {
  project: Project;
  sources: SourceService;
  sinks: SinkService;
  config: Pick<Config, 'publicApiUrl'>;
}

/**
 * POST .../sources/{sourceId}/otlp/default-sinks (Sluice's own helper): creates the usual
 * sinks of an OTLP source, one per signal (`logs`, `metrics`, `traces`, each with
 * allowedSignals set to its signal), with columns covering every flattened field, tables
 * `<bucket>.<signal>` (bucket default `in.c-<sourceId>`). Each sink is created by its own task
 * exactly as POST .../sinks would; a sink id that already exists is reported and skipped.
 */
export const otlpSinkRoutes: FastifyPluginAsync<OtlpSinkRoutesOptions> = async (app, { project, sources, sinks, config }) => {

  app.post<{ Params: Params; Body: Body }>('/branches/:branchId/sources/:sourceId/otlp/default-sinks', {
    schema: {
      tags: ['sinks'],
      summary: 'Create the default logs, metrics and traces sinks of an OTLP source (one task per sink)',
      body: {
        // No body at all (null) is fine: every field has a default.
        type: ['object', 'null'],
        additionalProperties: false,
        properties: {
          bucket: { type: 'string', minLength: 1, maxLength: 128, description: 'Bucket of the tables, e.g. "in.c-otel" (default "in.c-<sourceId>").' },
          signals: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: SIGNALS }, description: 'Which of the three sinks to create (default all).' },
        },
      },
      response: { 202: looseObject('DefaultSinks: {sinks: [{sinkId, tableId, task} | {sinkId, tableId, error}]}') },
    },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    const source = sources.get(branchId, req.params.sourceId);
    if (source.type !== 'otlp') throw new ApiError(400, 'badRequest', `Source "${source.sourceId}" is not an OTLP source.`);
    const bucket = req.body?.bucket ?? defaultBucket(source.sourceId);
    const by = byToken(requireToken(req));
    const results: DefaultSinksAnswer['sinks'] = [];
    for (const signal of req.body?.signals ?? SIGNALS) {
      const d = defaultSink(signal, bucket);
      try {
        const task = await sinks.create(
          branchId,
          source.sourceId,
          { sinkId: d.sinkId, name: d.name, type: 'table', table: { type: 'keboola', tableId: d.tableId, mapping: { columns: d.columns } }, allowedSignals: d.allowedSignals },
          by,
          config.publicApiUrl,
        );
        results.push({ sinkId: d.sinkId, tableId: d.tableId, task });
      } catch (err) {
        // An existing sink is left as it is; other failures (a bad bucket id, limits) answer as POST .../sinks would.
        if (!isDomainError(err, 'alreadyExists')) throw err;
        results.push({ sinkId: d.sinkId, tableId: d.tableId, error: err.message });
      }
    }
    const created = results.some((r) => 'task' in r);
    if (!created) throw new ApiError(409, 'sinkAlreadyExists', `The default sinks of source "${source.sourceId}" already exist.`);
    const answer: DefaultSinksAnswer = { projectId: project.id, branchId, sourceId: source.sourceId, sinks: results };
    return reply.status(202).send(answer);
  });
};
