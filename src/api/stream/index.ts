import { VERSION } from '../../version.js';
import type { FastifyPluginAsync } from 'fastify';
import cors from '@fastify/cors';
import type { Config } from '../../config.js';
import type { TokenService } from '../../storage/tokens.js';
import { streamAuthHook } from './auth.js';
import { streamErrors } from './envelope.js';
import { answerErrorsWith } from '../../http/error-handler.js';
import { streamBodyParsers } from './body.js';
import { sourceRoutes, type SourceRoutesOptions } from './sources.js';
import { sinkRoutes, type SinkRoutesOptions } from './sinks.js';
import { settingsRoutes, type SettingsRoutesOptions } from './settings.js';
import { taskRoutes, type TaskRoutesOptions } from './tasks.js';
import { statisticsRoutes, type StatisticsRoutesOptions } from './statistics.js';
import { testEndpointRoutes, type TestEndpointRoutesOptions } from './test-endpoint.js';
import { failureRoutes, type FailureRoutesOptions } from './failures.js';
import { otlpSinkRoutes, type OtlpSinkRoutesOptions } from './otlp-sinks.js';
import { replayRoutes, type ReplayRoutesOptions } from './replay.js';
import { recentRecordRoutes, type RecentRecordRoutesOptions } from './recent-records.js';
import { mappingProposalRoutes, type MappingProposalRoutesOptions } from './mapping-proposal.js';

/**
 * What the Stream API uses: the union of its route families' options (each family's plugin
 * is typed with its own), the tokens of the authentication hook and the public URL of the index.
 */
export type StreamApiOptions = SourceRoutesOptions &
  SinkRoutesOptions &
  SettingsRoutesOptions &
  TaskRoutesOptions &
  StatisticsRoutesOptions &
  TestEndpointRoutesOptions &
  FailureRoutesOptions &
  OtlpSinkRoutesOptions &
  ReplayRoutesOptions &
  RecentRecordRoutesOptions &
  MappingProposalRoutesOptions & {
    tokens: Pick<TokenService, 'authenticateCaughtUp'>;
    config: Pick<Config, 'publicApiUrl' | 'maxJsonDepth'>;
  };

/**
 * The Stream management API (/v1) and its meta endpoints. Each route family is its own
 * plugin; this one adds the shared authentication hook and the Stream error envelope.
 */
export const streamApi: FastifyPluginAsync<StreamApiOptions> = async (app, opts) => {
  const publicApi = opts.config.publicApiUrl;
  // The reference's CORS policy for browser clients of the management API (ingestion has its own).
  await app.register(cors, {
    origin: '*',
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Content-Type', 'X-StorageApi-Token', 'X-KBC-ProjectId'],
  });

  // A browser lands on the console; API clients get the reference's redirect to the banner.
  app.get('/', { schema: { hide: true } }, async (req, reply) =>
    ((req.headers.accept ?? '').includes('text/html') ? reply.redirect('/console/', 302) : reply.redirect('/v1', 301)));
  // The body is the reference's, exactly (its clients and conformance compare it): the version
  // travels in a header.
  app.get('/v1', { schema: { tags: ['meta'], summary: 'API index (the version in the X-Sluice-Version header)' } }, async (_req, reply) => {
    reply.header('x-sluice-version', VERSION);
    return { api: 'stream', documentation: `${publicApi}/v1/documentation` };
  });
  app.get('/health-check', { schema: { tags: ['meta'], summary: 'Health check' } }, async (_req, reply) =>
    reply.type('text/plain').send('OK\n'),
  );

  await app.register(async (authenticated) => {
    answerErrorsWith(authenticated, streamErrors);
    authenticated.addHook('onRequest', streamAuthHook(opts.tokens));
    // JSON sent as a form (curl -d) or with no Content-Type is read as JSON (body.ts says why).
    streamBodyParsers(authenticated, opts.config.maxJsonDepth);
    await authenticated.register(sourceRoutes, opts);
    await authenticated.register(sinkRoutes, opts);
    await authenticated.register(settingsRoutes, opts);
    await authenticated.register(taskRoutes, opts);
    await authenticated.register(statisticsRoutes, opts);
    await authenticated.register(testEndpointRoutes, opts);
    await authenticated.register(failureRoutes, opts);
    await authenticated.register(otlpSinkRoutes, opts);
    await authenticated.register(replayRoutes, opts);
    await authenticated.register(recentRecordRoutes, opts);
    await authenticated.register(mappingProposalRoutes, opts);
  }, { prefix: '/v1' });
};
