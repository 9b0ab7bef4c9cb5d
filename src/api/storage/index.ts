import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import type { TokenService } from '../../storage/tokens.js';
import { storageAuthHook } from './auth.js';
import { storageErrors, storageNotFound } from './envelope.js';
import { answerErrorsWith } from '../../http/error-handler.js';
import { tokenRoutes, type TokenRoutesOptions } from './tokens.js';
import { tableRoutes, type TableRoutesOptions } from './tables.js';
import { configurationRoutes, type ConfigurationRoutesOptions } from './configurations.js';
import { eventRoutes, type EventRoutesOptions } from './events.js';
import { exportRoutes, type ExportRoutesOptions } from './exports.js';
import { sqlRoutes, type SqlRoutesOptions } from './sql.js';

/** What the Storage API uses: its route families' options together (each plugin gets its own part). */
export type StorageApiOptions = TokenRoutesOptions &
  TableRoutesOptions &
  ExportRoutesOptions &
  SqlRoutesOptions &
  ConfigurationRoutesOptions &
  EventRoutesOptions & {
    tokens: TokenService;
    project: Project;
    config: Pick<Config, 'publicApiUrl' | 'exportRetentionMs'>;
  };

/**
 * Storage API subset under /v2/storage (tokens, buckets, tables). Everything here, unknown
 * paths included, answers in the Storage envelope and needs X-StorageApi-Token. Further
 * Storage route families (e.g. component configurations) belong inside this plugin, so that
 * they share its hook, error handler and not-found handler (one per prefix in fastify).
 */
export const storageApi: FastifyPluginAsync<StorageApiOptions> = async (app, opts) => {
  const { tokens, tables, project, exports, storageJobs, files, sql, configurations, events, jobs, config } = opts;
  answerErrorsWith(app, storageErrors);
  app.addHook('onRequest', storageAuthHook(tokens));
  app.setNotFoundHandler((req, reply) => storageNotFound(req, reply));
  await app.register(tokenRoutes, { tokens, tables, project });
  await app.register(tableRoutes, { tables, config });
  await app.register(exportRoutes, { exports, storageJobs, files, config });
  await app.register(sqlRoutes, { sql });
  // Configurations and events exist under /v2/storage and /v2/storage/branch/{branchId}.
  for (const prefix of ['', '/branch/:branchId']) {
    await app.register(configurationRoutes, { configurations, project, prefix, config });
    await app.register(eventRoutes, { project, events, jobs, prefix });
  }
};
