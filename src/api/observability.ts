/**
 * The operator's endpoints, on every node's listener whatever its roles: `GET /metrics` (the
 * Prometheus text format; with --metrics-token it needs `Authorization: Bearer <token>`),
 * `GET /health/live` (the process answers) and `GET /health/ready` (503 with the checks that
 * failed). Probes are logged at debug: they come every few seconds.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Metrics } from '../observability/metrics.js';
import { readiness, type ReadinessDeps } from '../observability/readiness.js';
import { scrapeAnswer } from '../observability/scrape.js';
import { VERSION } from '../version.js';

export interface ObservabilityOptions {
  metrics: Metrics;
  metricsToken?: string;
  readiness: ReadinessDeps;
}

export const observabilityRoutes: FastifyPluginAsync<ObservabilityOptions> = async (app, opts) => {
  const meta = { tags: ['meta'] };

  app.get('/metrics', { schema: { ...meta, summary: 'Prometheus metrics (text format)' } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const answer = await scrapeAnswer(opts.metrics, opts.metricsToken, req.headers.authorization);
    if (answer.status === 401) reply.header('www-authenticate', 'Bearer');
    return reply.code(answer.status).type(answer.type).send(answer.body);
  });

  app.get('/health/live', { schema: { ...meta, summary: 'Liveness: the process answers' } }, async () => ({ status: 'ok', version: VERSION }));

  app.get('/health/ready', {
    schema: { ...meta, summary: 'Readiness: stores open, event log and target reachable, not stopping (503 names what is not ready)' },
  }, async (_req, reply) => {
    const { ready, checks } = await readiness(opts.readiness);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
  });
};
