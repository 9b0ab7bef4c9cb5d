/**
 * `sluice secrets rotate-key`: re-encrypts every stored `#` value (configurations, rows,
 * versions, state, jobs' `configData`) with a new key, on the data directory and metadata of a
 * node whose server is stopped, read with the options the server runs with. Offline, because
 * a running server would go on encrypting with the old key what the rotation already passed.
 *
 * Crash-safe: with the key in the data directory's file, the new key is written there (with the
 * old one after it, so that both decrypt) before anything is re-encrypted, the re-encryption is
 * one transaction, and only then the old key is dropped; a second run finishes an interrupted one.
 */
import { randomUUID } from 'node:crypto';
import { ConfigError, loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { openMetadataStore } from '../wiring/open-metadata-store.js';
import { generateEncryptionKey, InvalidKeyError, parseEncryptionKey, ValueCipher } from '../model/value-cipher.js';
import { ConfigurationService } from '../storage/configurations/service.js';
import { readKeyFile, recordProjectKey, writeKeyFile } from '../storage/encryption-key.js';
import { Secrets } from '../storage/secrets.js';
import { JobService } from '../queue/job-service.js';
import { resealStoredSecrets } from '../queue/stored-secrets.js';
import { KEY_SPACES } from '../server.js';
import { CliError, reportErrors, type CliIo } from './errors.js';

export const SECRETS_USAGE = `Usage: sluice secrets rotate-key [--new-key <key>] [--discard-unreadable] [options of serve]

Re-encrypts every stored # value (configurations, rows, versions, state, jobs' configData) with
a new key. Run it while the server is stopped, with the options the server runs with
(--data-dir, --encryption-key or SLUICE_ENCRYPTION_KEY for the current key, --kafka ... in a
cluster, where it writes through the cluster's metadata: run it on every node's data directory,
since each node keeps its own jobs).

Options:
  --new-key <key>         the new key, 32 bytes as base64 or hex (also SLUICE_NEW_ENCRYPTION_KEY,
                          which keeps it out of the process list). Without it a key is generated,
                          when the current one is the data directory's file (<data-dir>/encryption-key)
  --discard-unreadable    # values that no known key decrypts (the key was lost) become empty
                          strings, encrypted with the new key; without it the command lists them
                          and changes nothing
  --help                  this message

With the key in <data-dir>/encryption-key, the file gets the new key. With SLUICE_ENCRYPTION_KEY,
set it to the new key (on every node of a cluster) before starting the server again.
Queued jobs are re-encrypted and run after the start; jobs that were running ended when the
server stopped.
`;

interface RotateOptions {
  newKey?: Buffer;
  discard: boolean;
  serveArgs: string[];
}

function parseArgs(argv: string[], env: NodeJS.ProcessEnv): RotateOptions | 'help' {
  const options: RotateOptions = { discard: false, serveArgs: [] };
  let newKeyText = env.SLUICE_NEW_ENCRYPTION_KEY || undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return 'help';
    if (arg === '--discard-unreadable') options.discard = true;
    else if (arg === '--new-key') {
      newKeyText = argv[++i];
      if (newKeyText === undefined) throw new CliError('--new-key needs a value.', 2);
    } else if (arg.startsWith('--new-key=')) newKeyText = arg.slice('--new-key='.length);
    else options.serveArgs.push(arg);
  }
  if (newKeyText !== undefined) {
    try {
      options.newKey = parseEncryptionKey(newKeyText);
    } catch (err) {
      if (err instanceof InvalidKeyError) throw new CliError(`The new key ${err.message}.`, 2);
      throw err;
    }
  }
  return options;
}

/** `sluice secrets ...`; resolves to the exit code. */
export async function runSecretsCli(argv: string[], io: CliIo = process): Promise<number> {
  return reportErrors(io, async () => {
    const [command, ...rest] = argv;
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      io.stdout.write(SECRETS_USAGE);
      return 0;
    }
    if (command !== 'rotate-key') throw new CliError(`Unknown secrets command "${command}": the command is "sluice secrets rotate-key" (sluice secrets --help).`, 2);
    const options = parseArgs(rest, io.env);
    if (options === 'help') {
      io.stdout.write(SECRETS_USAGE);
      return 0;
    }
    try {
      return await rotateKey(options, io);
    } catch (err) {
      // The serve options, or a key file that cannot be read.
      if (err instanceof ConfigError) throw new CliError(err.message, 2);
      throw err;
    }
  });
}

async function rotateKey(options: RotateOptions, io: CliIo): Promise<number> {
  const config = loadConfig(options.serveArgs, io.env);
  // The keys values may be encrypted with now: the configured one, or the file's (all of them,
  // when an earlier run was interrupted).
  const fromFile = config.encryptionKey ? undefined : readKeyFile(config.dataDir);
  const oldKeys = config.encryptionKey ? [config.encryptionKey] : fromFile ?? [];
  // The file holds the key unless the configuration gives one, or a cluster node has none.
  const keyInFile = !config.encryptionKey && (fromFile !== undefined || !config.kafkaBrokers);
  if (!options.newKey && !keyInFile) {
    throw new CliError('The current key comes from SLUICE_ENCRYPTION_KEY (or --encryption-key): give the new one with --new-key (or SLUICE_NEW_ENCRYPTION_KEY).', 2);
  }
  const newKey = options.newKey ?? parseEncryptionKey(generateEncryptionKey());
  const cipher = new ValueCipher(newKey, oldKeys);
  const secrets = new Secrets(cipher);
  const mode = options.discard ? 'rotate-discard' : 'rotate';

  const store = await openMetadataStore(config, createLogger('warn'), randomUUID(), KEY_SPACES);
  try {
    const configurations = new ConfigurationService(store, secrets);
    const stores = { configurations, jobs: new JobService(store, configurations, config.defaultBranchId, secrets) };
    const check = resealStoredSecrets(stores, secrets, mode, false);
    if (check.unreadable.length > 0 && !options.discard) {
      io.stderr.write(`sluice: ${check.unreadable.length} # value(s) cannot be decrypted with the current key${oldKeys.length === 1 ? '' : 's'}; nothing was changed:\n`);
      for (const where of check.unreadable) io.stderr.write(`  ${where}\n`);
      io.stderr.write('Give the key they were encrypted with (SLUICE_ENCRYPTION_KEY), or --discard-unreadable to empty them.\n');
      return 1;
    }
    // Both keys in the file first: whatever happens next, every value stays readable.
    if (keyInFile) writeKeyFile(config.dataDir, [newKey, ...oldKeys]);
    const done = resealStoredSecrets(stores, secrets, mode, true);
    recordProjectKey(store, cipher.keyId);
    await store.settled();
    if (keyInFile) writeKeyFile(config.dataDir, [newKey]);
    io.stdout.write(`Re-encrypted ${done.encrypted} # value(s) in ${done.entries} configuration(s), row(s), version(s) and job(s) with the new key (key id ${cipher.keyId}).\n`);
    if (done.unreadable.length > 0) io.stdout.write(`Emptied ${done.unreadable.length} value(s) that could not be decrypted: they must be entered again.\n`);
    io.stdout.write(keyInFile
      ? `The new key is in ${config.dataDir}/encryption-key.\n`
      : 'Set SLUICE_ENCRYPTION_KEY to the new key (on every node of a cluster) before starting the server.\n');
    return 0;
  } finally {
    await store.close();
  }
}
