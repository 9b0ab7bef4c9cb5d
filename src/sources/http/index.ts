/**
 * The ingestion endpoint of HTTP sources, as one fastify plugin. It owns the
 * prefix /stream: its routes, body parsing (raw bytes, any content type), size limit, CORS,
 * error envelope (`stream.in.`) and not-found answer stay inside it.
 */
import type { FastifyPluginAsync } from 'fastify';
import { ingestRoutes, type IngestApiOptions } from './routes.js';

export type { IngestApiOptions } from './routes.js';
export { MetadataIngestSources, type IngestSources, type IngestTarget } from '../ingest/sources.js';
export { formatByteLimit } from '../ingest/envelope.js';

export const ingestApi: FastifyPluginAsync<IngestApiOptions> = async (app, opts) => {
  await app.register(ingestRoutes, { ...opts, prefix: '/stream' });
};
