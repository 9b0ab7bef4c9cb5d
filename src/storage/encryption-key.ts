/**
 * Where a node's encryption key comes from: SLUICE_ENCRYPTION_KEY (--encryption-key), else the
 * file `<data-dir>/encryption-key`, generated on the first start (mode 0600, created atomically,
 * never logged). The file holds one key per line, base64, the current key first; a line after
 * it is a key being replaced (only between the steps of `sluice secrets rotate-key`).
 *
 * A cluster's nodes must share the key. A node of a cluster (--kafka) does not generate one (it
 * would encrypt what the others cannot read); and every node checks its key against the
 * project's key id kept in the shared metadata, refusing to start with another key.
 */
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config.js';
import type { KeySpace, MetadataStore } from '../ports/metadata-store.js';
import { generateEncryptionKey, InvalidKeyError, parseEncryptionKey, ValueCipher } from '../model/value-cipher.js';

export const ENCRYPTION_KEY_FILE = 'encryption-key';

const PROJECT_KEY = 'storage/encryptionKey';
const PLAIN_SEALED = 'storage/plainSecretsSealed';
/**
 * The project's key id, shared by the cluster's nodes; and whether this node has encrypted what
 * was saved before encryption existed (once per node: the pass reads every configuration,
 * version and job, which no start should pay again).
 */
export const ENCRYPTION_KEY_SPACES: readonly KeySpace[] = [
  { prefix: PROJECT_KEY, shared: true },
  { prefix: PLAIN_SEALED, shared: false },
];

export interface NodeKeys {
  /** The key ring; undefined when the node has no key. */
  cipher?: ValueCipher;
  /** option: SLUICE_ENCRYPTION_KEY or the flag; file: the data directory's (generated: just now). */
  source: 'option' | 'file' | 'generated' | 'none';
}

/** The keys of the data directory's file (the current one first), or undefined when there is none. */
export function readKeyFile(dataDir: string): Buffer[] | undefined {
  const file = join(dataDir, ENCRYPTION_KEY_FILE);
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean);
  try {
    if (lines.length === 0) throw new InvalidKeyError('is missing: the file is empty');
    return lines.map(parseEncryptionKey);
  } catch (err) {
    throw new ConfigError(`The encryption key in ${file} ${(err as Error).message}.`);
  }
}

/** Writes `text` to `file` (mode 0600) through a temporary file, durably. */
function writeTemp(file: string, text: string): string {
  const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return temp;
}

/** Replaces the key file at once (rename): the current key first, then the keys being replaced. */
export function writeKeyFile(dataDir: string, keys: readonly Buffer[]): void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, ENCRYPTION_KEY_FILE);
  renameSync(writeTemp(file, keys.map((k) => k.toString('base64')).join('\n') + '\n'), file);
}

/**
 * A new key file, unless one appeared meanwhile (link() fails when the name exists, so two
 * processes starting on one directory end up with the same key): the key the file holds.
 */
function createKeyFile(dataDir: string): Buffer[] {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, ENCRYPTION_KEY_FILE);
  const temp = writeTemp(file, generateEncryptionKey() + '\n');
  try {
    linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(temp, { force: true });
  }
  return readKeyFile(dataDir)!;
}

/** The node's key ring as the configuration and the data directory give it. */
export function resolveEncryptionKeys(opts: { dataDir: string; key?: Buffer; cluster: boolean }): NodeKeys {
  if (opts.key) return { cipher: new ValueCipher(opts.key), source: 'option' };
  const fromFile = readKeyFile(opts.dataDir);
  if (fromFile) return { cipher: new ValueCipher(fromFile[0], fromFile.slice(1)), source: 'file' };
  if (opts.cluster) return { source: 'none' };
  const created = createKeyFile(opts.dataDir);
  return { cipher: new ValueCipher(created[0], created.slice(1)), source: 'generated' };
}

/** The project's key id as the shared metadata records it (undefined before any node had a key). */
export function projectKeyId(store: MetadataStore): string | undefined {
  return store.get<{ keyId: string }>(PROJECT_KEY)?.keyId;
}

/** Whether this node's pass over the values saved before encryption has been done. */
export function plainSecretsSealed(store: MetadataStore): boolean {
  return store.get(PLAIN_SEALED) !== undefined;
}

export function markPlainSecretsSealed(store: MetadataStore): void {
  store.transact((tx) => tx.put(PLAIN_SEALED, { at: new Date().toISOString() }));
}

/** Records `keyId` as the project's key (the first node with a key, and a rotation). */
export function recordProjectKey(store: MetadataStore, keyId: string): void {
  store.transact((tx) => tx.put(PROJECT_KEY, { keyId, recordedAt: new Date().toISOString() }));
}

/**
 * At start: a node whose key ring does not hold the project's key refuses to start (what it
 * saved could not be read by the others, nor could it read theirs). The first node with a key
 * records its id.
 */
export function checkProjectKey(store: MetadataStore, cipher: ValueCipher | undefined): void {
  if (!cipher) return;
  const recorded = projectKeyId(store);
  if (recorded === undefined) {
    recordProjectKey(store, cipher.keyId);
    return;
  }
  if (!cipher.keyIds.includes(recorded)) {
    throw new ConfigError(
      `this node's encryption key (key id ${cipher.keyId}) is not the project's (key id ${recorded}), with which the stored secrets are encrypted. ` +
      'Set SLUICE_ENCRYPTION_KEY (or --encryption-key) to the project\'s key, the same on every node of a cluster. ' +
      'If that key is lost, "sluice secrets rotate-key --discard-unreadable" replaces it (the secrets it encrypted must then be entered again).');
  }
}
