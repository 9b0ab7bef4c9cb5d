import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../../services.js';
import { storageAuthHook } from './auth.js';
import { storageErrors, storageNotFound } from './envelope.js';
import { answerErrorsWith } from '../error-handler.js';
import { tokenRoutes } from './tokens.js';
import { tableRoutes } from './tables.js';
import { configurationRoutes } from './configurations.js';
import { eventRoutes } from './events.js';
import { exportRoutes } from './exports.js';
import { sqlRoutes } from './sql.js';

/**
 * Storage API subset under /v2/storage (tokens, buckets, tables). Everything here, unknown
 * paths included, answers in the Storage envelope and needs X-StorageApi-Token. Further
 * Storage route families (e.g. component configurations) belong inside this plugin, so that
 * they share its hook, error handler and not-found handler (one per prefix in fastify).
 */
export const storageApi: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  answerErrorsWith(app, storageErrors);
  app.addHook('onRequest', storageAuthHook(services));
  app.setNotFoundHandler((req, reply) => storageNotFound(req, reply));
  await app.register(tokenRoutes, { services });
  await app.register(tableRoutes, { services });
  await app.register(exportRoutes, { services });
  await app.register(sqlRoutes, { services });
  // Configurations and events exist under /v2/storage and /v2/storage/branch/{branchId}.
  for (const prefix of ['', '/branch/:branchId']) {
    await app.register(configurationRoutes, { services, prefix });
    await app.register(eventRoutes, { services, prefix });
  }
};
