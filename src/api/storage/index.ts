import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../../services.js';

/** Storage API subset under /v2/storage (tokens, buckets, tables). */
export const storageApi: FastifyPluginAsync<{ services: Services }> = async () => {
  // Routes are added by the storage API module.
};
