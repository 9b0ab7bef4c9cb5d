/**
 * `parameters.sshProxy`: the SSH server the API is reached through (ssh-tunnel.ts opens it).
 */
import ssh2 from 'ssh2';
import { UserError } from '../errors.js';

export interface SshProxy {
  host: string;
  port: number;
  user: string;
  privateKey: string;
}

// ssh2 is CommonJS: its default export, taken apart (named imports are not detected for it).
const { utils } = ssh2;

/** `parameters.sshProxy` of config.json: undefined when absent; a clear error when incomplete. */
export function parseSshProxy(value: unknown): SshProxy | undefined {
  if (value === undefined) return undefined;
  const fail = (message: string): never => {
    throw new UserError(`Invalid configuration: parameters.sshProxy.${message}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('must be an object with host, port, user and #privateKey');
  const v = value as Record<string, unknown>;
  if (typeof v.host !== 'string' || v.host === '') fail('host must be a non-empty string');
  if (typeof v.user !== 'string' || v.user === '') fail('user must be a non-empty string');
  const port = v.port === undefined ? 22 : Number(v.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) fail('port must be a port number');
  if (typeof v['#privateKey'] !== 'string') return fail('#privateKey must be a private key (PEM or OpenSSH)');
  const parsed = utils.parseKey(v['#privateKey'] as string);
  if (parsed instanceof Error) fail(`#privateKey cannot be read: ${parsed.message}`);
  return { host: v.host as string, port, user: v.user as string, privateKey: v['#privateKey'] as string };
}
