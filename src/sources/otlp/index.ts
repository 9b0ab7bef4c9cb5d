/**
 * The OTLP/HTTP ingestion endpoint of OTLP sources, as one fastify plugin under /otlp: its
 * routes, raw body handling, size limits, CORS and answers (protobuf or JSON, as the request)
 * stay inside it.
 */
import type { FastifyPluginAsync } from 'fastify';
import { otlpRoutes, type OtlpApiOptions } from './routes.js';

export type { OtlpApiOptions } from './routes.js';

export const otlpApi: FastifyPluginAsync<OtlpApiOptions> = async (app, opts) => {
  await app.register(otlpRoutes, { ...opts, prefix: '/otlp' });
};
