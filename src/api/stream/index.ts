import { VERSION } from '../../version.js';
import type { FastifyPluginAsync } from 'fastify';
import cors from '@fastify/cors';
import type { Services } from '../../services.js';
import { streamAuthHook } from './auth.js';
import { streamErrors } from './envelope.js';
import { answerErrorsWith } from '../error-handler.js';
import { streamBodyParsers } from './body.js';
import { sourceRoutes } from './sources.js';
import { sinkRoutes } from './sinks.js';
import { settingsRoutes } from './settings.js';
import { taskRoutes } from './tasks.js';
import { statisticsRoutes } from './statistics.js';
import { testEndpointRoutes } from './test-endpoint.js';
import { failureRoutes } from './failures.js';
import { otlpSinkRoutes } from './otlp-sinks.js';
import { replayRoutes } from './replay.js';
import { recentRecordRoutes } from './recent-records.js';

/**
 * The Stream management API (/v1) and its meta endpoints. Each route family is its own
 * plugin; this one adds the shared authentication hook and the Stream error envelope.
 */
export const streamApi: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  const publicApi = services.config.publicApiUrl;
  // The reference's CORS policy for browser clients of the management API (ingestion has its own).
  await app.register(cors, {
    origin: '*',
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Content-Type', 'X-StorageApi-Token', 'X-KBC-ProjectId'],
  });

  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/v1', 301));
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
    authenticated.addHook('onRequest', streamAuthHook(services));
    // JSON sent as a form (curl -d) or with no Content-Type is read as JSON (body.ts says why).
    streamBodyParsers(authenticated);
    await authenticated.register(sourceRoutes, { services });
    await authenticated.register(sinkRoutes, { services });
    await authenticated.register(settingsRoutes, { services });
    await authenticated.register(taskRoutes, { services });
    await authenticated.register(statisticsRoutes, { services });
    await authenticated.register(testEndpointRoutes, { services });
    await authenticated.register(failureRoutes, { services });
    await authenticated.register(otlpSinkRoutes, { services });
    await authenticated.register(replayRoutes, { services });
    await authenticated.register(recentRecordRoutes, { services });
  }, { prefix: '/v1' });
};
