import { mkdirSync, readFileSync, writeFileSync, existsSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { LmdbMetadataStore } from './connectors/metadata/lmdb-store.js';
import { TokenService } from './storage/tokens.js';
import { Project } from './storage/project.js';
import { buildApp } from './api/app.js';
import type { Services } from './services.js';

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  /** The address the listener is bound to, e.g. http://127.0.0.1:8000 */
  address: string;
  close(): Promise<void>;
}

const MASTER_TOKEN_FILE = 'master-token';

/**
 * The master token: SLUICE_MASTER_TOKEN when set, otherwise the one generated on the first
 * start and kept in the data directory (mode 0600). `generated` is true only on that first
 * start, so the caller prints it exactly once.
 */
function resolveMasterToken(config: Config): { secret: string; generated: boolean } {
  if (config.masterToken) return { secret: config.masterToken, generated: false };
  const file = join(config.dataDir, MASTER_TOKEN_FILE);
  if (existsSync(file)) return { secret: readFileSync(file, 'utf8').trim(), generated: false };
  const secret = `${config.projectId}-1-${randomBytes(30).toString('base64url').slice(0, 40)}`;
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return { secret, generated: true };
}

/** Opens every store of the node, builds the services and the HTTP app, and listens. */
export async function startServer(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  const started = Date.now();
  mkdirSync(config.dataDir, { recursive: true });
  const metadata = new LmdbMetadataStore(join(config.dataDir, 'metadata'));
  const project = new Project(config.projectId, config.defaultBranchId);
  const tokens = new TokenService(metadata, config.projectId);
  const master = resolveMasterToken(config);
  tokens.ensureMaster(master.secret);

  const services: Services = { config, logger, metadata, project, tokens };
  const app = await buildApp(services);
  const address = await app.listen({ host: config.host, port: config.port });
  if (master.generated) {
    // Printed once, on the first start; afterwards it is only in <dataDir>/master-token.
    process.stdout.write(`\nMaster token (saved to ${join(config.dataDir, MASTER_TOKEN_FILE)}): ${master.secret}\n\n`);
  }
  logger.info({ address, dataDir: config.dataDir, projectId: config.projectId, startupMs: Date.now() - started }, 'sluice is ready');

  let closing: Promise<void> | undefined;
  return {
    app,
    services,
    address,
    close() {
      closing ??= (async () => {
        await app.close();
        await metadata.close();
      })();
      return closing;
    },
  };
}
