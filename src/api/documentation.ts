// Brings the OpenAPI fields (tags, summary, hide) into FastifySchema for every route module.
import '@fastify/swagger';
import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../services.js';

/** OpenAPI document generated from the route schemas, and its browsable UI. */
export const documentation: FastifyPluginAsync<{ services: Services }> = async () => {
  // Filled in by the documentation module.
};
