/**
 * One typed configuration object, read from command-line flags and SLUICE_* environment
 * variables (flags win). Every other module receives the parts it needs from here.
 */
import { resolve } from 'node:path';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** When undefined, a master token is generated on first start and kept in the data dir. */
  masterToken?: string;
  projectId: number;
  defaultBranchId: number;
  /** Base URL of the management API, written into task and source URLs. */
  publicApiUrl: string;
  /** Base URL of the ingestion endpoint, written into source ingestion URLs. */
  publicIngestUrl: string;
  logLevel: string;
}

export class ConfigError extends Error {}

interface Option {
  flag: string;
  env: string;
  key: keyof Config;
  parse: (raw: string) => unknown;
  help: string;
}

const int = (name: string) => (raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${name} must be a non-negative integer, got "${raw}".`);
  return n;
};
const port = (raw: string): number => {
  const n = int('port')(raw);
  if (n > 65535) throw new ConfigError(`port must be at most 65535, got "${raw}".`);
  return n;
};
const url = (name: string) => (raw: string): string => {
  try {
    new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}".`);
  }
  return raw.replace(/\/+$/, '');
};
const str = (raw: string): string => raw;

export const OPTIONS: Option[] = [
  { flag: '--host', env: 'SLUICE_HOST', key: 'host', parse: str, help: 'listen address (default 0.0.0.0)' },
  { flag: '--port', env: 'SLUICE_PORT', key: 'port', parse: port, help: 'listen port (default 8000; 0 picks a free port)' },
  { flag: '--data-dir', env: 'SLUICE_DATA_DIR', key: 'dataDir', parse: str, help: 'data directory (default ./data)' },
  { flag: '--master-token', env: 'SLUICE_MASTER_TOKEN', key: 'masterToken', parse: str, help: 'master token (default: generated on first start)' },
  { flag: '--project-id', env: 'SLUICE_PROJECT_ID', key: 'projectId', parse: int('project id'), help: 'project id (default 1)' },
  { flag: '--branch-id', env: 'SLUICE_BRANCH_ID', key: 'defaultBranchId', parse: int('branch id'), help: 'id of the default branch (default 1)' },
  { flag: '--public-api-url', env: 'SLUICE_PUBLIC_API_URL', key: 'publicApiUrl', parse: url('public API URL'), help: 'public base URL of the API (default http://localhost:<port>)' },
  { flag: '--public-ingest-url', env: 'SLUICE_PUBLIC_INGEST_URL', key: 'publicIngestUrl', parse: url('public ingest URL'), help: 'public base URL of ingestion (default: the API URL)' },
  { flag: '--log-level', env: 'SLUICE_LOG_LEVEL', key: 'logLevel', parse: str, help: 'pino log level (default info)' },
];

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Partial<Record<keyof Config, unknown>> = {};
  for (const o of OPTIONS) {
    const v = env[o.env];
    if (v !== undefined && v !== '') raw[o.key] = o.parse(v);
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const o = OPTIONS.find((x) => x.flag === flag);
    if (!o) throw new ConfigError(`Unknown option "${arg}". Options: ${OPTIONS.map((x) => x.flag).join(', ')}.`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new ConfigError(`Option ${flag} needs a value.`);
    raw[o.key] = o.parse(value);
  }
  const cfgPort = (raw.port as number | undefined) ?? 8000;
  const publicApiUrl = (raw.publicApiUrl as string | undefined) ?? `http://localhost:${cfgPort}`;
  return {
    host: (raw.host as string | undefined) ?? '0.0.0.0',
    port: cfgPort,
    dataDir: resolve((raw.dataDir as string | undefined) ?? './data'),
    masterToken: raw.masterToken as string | undefined,
    projectId: (raw.projectId as number | undefined) ?? 1,
    defaultBranchId: (raw.defaultBranchId as number | undefined) ?? 1,
    publicApiUrl,
    publicIngestUrl: (raw.publicIngestUrl as string | undefined) ?? publicApiUrl,
    logLevel: (raw.logLevel as string | undefined) ?? 'info',
  };
}

export function optionsHelp(): string {
  return OPTIONS.map((o) => `  ${o.flag.padEnd(20)} ${o.env.padEnd(26)} ${o.help}`).join('\n');
}
