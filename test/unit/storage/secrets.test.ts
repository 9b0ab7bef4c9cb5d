/**
 * Encrypted `#` values: the cipher (AES-256-GCM envelope, key ring, key parsing), the walk over
 * a document's `#` values, the sealing rules of a save, the decryption for a job, the passes of
 * migration and rotation, and where a node's key comes from.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { DomainError } from '../../../src/domain-errors.js';
import { formatPath, mapSecretValues, redactSecrets, secretValues } from '../../../src/model/secret-values.js';
import {
  CipherError, encryptedKeyId, ENCRYPTED_PREFIX, generateEncryptionKey, InvalidKeyError, isEncrypted, keyIdOf, parseEncryptionKey, ValueCipher,
} from '../../../src/model/value-cipher.js';
import { flatten } from '../../../src/components/echo/index.js';
import { checkProjectKey, ENCRYPTION_KEY_FILE, projectKeyId, readKeyFile, resolveEncryptionKeys } from '../../../src/storage/encryption-key.js';
import { SecretUnavailableError, Secrets, type ResealCount } from '../../../src/storage/secrets.js';

const keyA = parseEncryptionKey(generateEncryptionKey());
const keyB = parseEncryptionKey(generateEncryptionKey());

function envelope(value: string): Buffer {
  return Buffer.from(value.slice(ENCRYPTED_PREFIX.length), 'base64');
}

function reassemble(bytes: Buffer): string {
  return ENCRYPTED_PREFIX + bytes.toString('base64');
}

/** The error `fn` throws. */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}

describe('the value cipher', () => {
  const cipher = new ValueCipher(keyA);

  it('round-trips any string, the empty one and non-ASCII included, in the KBC::ProjectSecure:: form', () => {
    for (const plain of ['hunter2', '', 'žluťoučký kůň 🐴', 'x'.repeat(100_000), 'KBC::ProjectSecure::not-really']) {
      const encrypted = cipher.encrypt(plain);
      expect(isEncrypted(encrypted)).toBe(true);
      expect(encrypted).toMatch(/^KBC::ProjectSecure::[A-Za-z0-9+/]+={0,2}$/);
      expect(encrypted.includes(plain) && plain.length > 3 && !plain.startsWith('KBC')).toBe(false);
      expect(cipher.decrypt(encrypted)).toBe(plain);
    }
  });

  it('uses a random IV: the same value encrypts differently each time', () => {
    const a = cipher.encrypt('same');
    const b = cipher.encrypt('same');
    expect(a).not.toBe(b);
    expect(envelope(a).subarray(9, 21)).not.toEqual(envelope(b).subarray(9, 21));
  });

  it('carries the version and the key id, and only the key ring decrypts', () => {
    const encrypted = cipher.encrypt('secret');
    expect(envelope(encrypted)[0]).toBe(1);
    expect(encryptedKeyId(encrypted)).toBe(keyIdOf(keyA));
    expect(keyIdOf(keyA)).toMatch(/^[0-9a-f]{16}$/);
    const other = new ValueCipher(keyB);
    const err = thrown(() => other.decrypt(encrypted)) as CipherError;
    expect(err).toBeInstanceOf(CipherError);
    expect(err.reason).toBe('unknownKey');
    expect(err.message).toBe(`it was encrypted with another key (key id ${keyIdOf(keyA)}; this node's key id is ${keyIdOf(keyB)})`);
    // A ring with the old key after the new one decrypts both, and encrypts with the new one.
    const ring = new ValueCipher(keyB, [keyA]);
    expect(ring.decrypt(encrypted)).toBe('secret');
    expect(encryptedKeyId(ring.encrypt('x'))).toBe(keyIdOf(keyB));
    expect(ring.keyIds).toEqual([keyIdOf(keyB), keyIdOf(keyA)]);
  });

  it('detects any change: of the ciphertext, the tag, the IV or the header', () => {
    const encrypted = cipher.encrypt('do not touch');
    const bytes = envelope(encrypted);
    for (const at of [bytes.length - 1, 9 + 12 + 3, 9 + 2]) {
      const altered = Buffer.from(bytes);
      altered[at] ^= 0x01;
      const err = thrown(() => cipher.decrypt(reassemble(altered))) as CipherError;
      expect(err.reason, `byte ${at}`).toBe('tampered');
      expect(err.message).toBe('it was altered (its authentication failed)');
    }
    // The header is authenticated too: the same value under another key id is not accepted by a ring with both.
    const moved = Buffer.from(bytes);
    Buffer.from(keyIdOf(keyB), 'hex').copy(moved, 1);
    expect((thrown(() => new ValueCipher(keyB, [keyA]).decrypt(reassemble(moved))) as CipherError).reason).toBe('tampered');
  });

  it('refuses what is not its envelope', () => {
    for (const value of ['KBC::ProjectSecure::', 'KBC::ProjectSecure::not base64!', 'KBC::ProjectSecure::AAAA', `${ENCRYPTED_PREFIX}${Buffer.alloc(40, 2).toString('base64')}`, 'plain']) {
      expect((thrown(() => cipher.decrypt(value)) as CipherError).reason, value).toBe('malformed');
    }
  });
});

describe('encryption keys as written', () => {
  it('reads base64, base64url and hex of 32 bytes', () => {
    const key = Buffer.alloc(32, 7);
    expect(parseEncryptionKey(key.toString('base64'))).toEqual(key);
    expect(parseEncryptionKey(key.toString('base64url'))).toEqual(key);
    expect(parseEncryptionKey(key.toString('hex'))).toEqual(key);
    expect(parseEncryptionKey(` ${key.toString('base64')}\n`)).toEqual(key);
  });

  it('refuses another length with a clear message that does not repeat the key', () => {
    const short = Buffer.alloc(31, 9).toString('base64');
    const err = thrown(() => parseEncryptionKey(short));
    expect(err).toBeInstanceOf(InvalidKeyError);
    expect(err.message).toBe('must be 32 bytes written as base64 (44 characters) or hex (64 characters), got 44 characters, 31 bytes as base64; generate one with "openssl rand -base64 32"');
    expect(err.message).not.toContain(short);
    expect(thrown(() => parseEncryptionKey('not a key!')).message).toContain('got 10 characters, neither base64 nor hex');
  });

  it('is the --encryption-key flag and SLUICE_ENCRYPTION_KEY, with a configuration error for a wrong one', () => {
    const key = Buffer.alloc(32, 3);
    expect(loadConfig([], {}).encryptionKey).toBeUndefined();
    expect(loadConfig([], { SLUICE_ENCRYPTION_KEY: key.toString('hex') }).encryptionKey).toEqual(key);
    expect(loadConfig(['--encryption-key', key.toString('base64')], { SLUICE_ENCRYPTION_KEY: 'ignored' }).encryptionKey).toEqual(key);
    const err = thrown(() => loadConfig([], { SLUICE_ENCRYPTION_KEY: 'abcd' }));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(/^The encryption key must be 32 bytes written as base64 \(44 characters\) or hex \(64 characters\), got 4 characters, 3 bytes as base64; /);
  });
});

describe('the # values of a document', () => {
  const doc = {
    '#top': 'a',
    plain: 'not a secret',
    nested: { deeper: { '#password': 'b', user: 'u' } },
    list: [{ '#token': 'c' }, 'x', [{ '#deep': 'd' }]],
    '#number': 42,
    '#list': ['not', 'a', 'string value'],
    '#object': { inside: 'searched', '#yes': 'e' },
  };

  it('are the string values of # keys at any depth, in objects inside arrays too', () => {
    expect(secretValues(doc).map((s) => [formatPath(s.path), s.text])).toEqual([
      ['#top', 'a'], ['nested.deeper.#password', 'b'], ['list[0].#token', 'c'], ['list[2][0].#deep', 'd'], ['#object.#yes', 'e'],
    ]);
  });

  it('are mapped into a copy that shares what has none', () => {
    const mapped = mapSecretValues(doc, (text) => text.toUpperCase()) as typeof doc;
    expect(mapped).toEqual({ ...doc, '#top': 'A', nested: { deeper: { '#password': 'B', user: 'u' } }, list: [{ '#token': 'C' }, 'x', [{ '#deep': 'D' }]], '#object': { inside: 'searched', '#yes': 'E' } });
    expect(doc['#top']).toBe('a');
    expect(mapped['#list']).toBe(doc['#list']);
    const none = { a: [1, { b: 'c' }] };
    expect(mapSecretValues(none, () => 'changed')).toBe(none);
  });

  it('keep a key named __proto__ a key', () => {
    const parsed = JSON.parse('{"__proto__": {"#x": "p"}}') as unknown;
    const mapped = mapSecretValues(parsed, () => 'q');
    expect(JSON.stringify(mapped)).toBe('{"__proto__":{"#x":"q"}}');
  });

  it('are masked in log text when they are 4 characters or more', () => {
    expect(redactSecrets('token abcd and abcdef and ab', ['abcd', 'abcdef', 'ab'])).toBe('token ***** and ***** and ab');
  });

  it('are masked by the echo component, with everything under a # key', () => {
    expect(flatten({ user: 'u', '#password': 'p', db: { '#conn': { host: 'h', port: 1 }, '#list': ['x'] }, list: [{ '#t': 'y' }] })).toEqual([
      ['user', 'u'], ['#password', '*****'], ['db.#conn.host', '*****'], ['db.#conn.port', '*****'], ['db.#list.0', '*****'], ['list.0.#t', '*****'],
    ]);
  });
});

describe('secrets at rest', () => {
  const secrets = new Secrets(new ValueCipher(keyA));

  it('encrypts plain # values on save and keeps valid encrypted ones as they are', () => {
    const sealed = secrets.seal({ parameters: { '#password': 'p1', list: [{ '#token': 't1' }] }, other: 'x' }, 'configuration');
    expect(isEncrypted(sealed.parameters['#password'])).toBe(true);
    expect(isEncrypted(sealed.parameters.list[0]['#token'])).toBe(true);
    expect(sealed.other).toBe('x');
    const again = secrets.seal(sealed, 'configuration');
    expect(again).toBe(sealed);
    expect(secrets.reveal(again, 'configuration')).toEqual({ parameters: { '#password': 'p1', list: [{ '#token': 't1' }] }, other: 'x' });
  });

  it('keeps the stored ciphertext when the same plain value is saved again at the same path', () => {
    const stored = secrets.seal({ '#a': 'same', '#b': 'old' }, 'configuration');
    const next = secrets.seal({ '#a': 'same', '#b': 'new' }, 'configuration', stored);
    expect(next['#a']).toBe(stored['#a']);
    expect(next['#b']).not.toBe(stored['#b']);
    expect(secrets.reveal(next, 'configuration')).toEqual({ '#a': 'same', '#b': 'new' });
  });

  it('refuses an encrypted value it cannot decrypt with 400 naming the field and why', () => {
    const foreign = new ValueCipher(keyB).encrypt('x');
    const err = thrown(() => secrets.seal({ parameters: { '#password': foreign } }, 'configuration')) as DomainError;
    expect(err).toBeInstanceOf(DomainError);
    expect(err.kind).toBe('invalid');
    expect(err.message).toBe(`The value of "configuration.parameters.#password" starts with "KBC::ProjectSecure::" but is not a valid encrypted value of this project: it was encrypted with another key (key id ${keyIdOf(keyB)}; this node's key id is ${keyIdOf(keyA)}). Send the plain value to have it encrypted, or the encrypted value exactly as it was answered.`);
    const tampered = Buffer.from(envelope(secrets.seal({ '#x': 'y' }, 'c')['#x']));
    tampered[tampered.length - 1] ^= 1;
    expect(thrown(() => secrets.seal({ '#x': reassemble(tampered) }, 'configData')).message).toContain('"configData.#x" starts with "KBC::ProjectSecure::" but is not a valid encrypted value of this project: it was altered');
    expect(thrown(() => secrets.seal({ '#x': 'KBC::ProjectSecure::def50200abc' }, 'state')).message).toContain('it is not an encrypted value of Sluice');
  });

  it('refuses a document nested too deeply to walk with 400, not a crash', () => {
    let deep: unknown = { '#x': 'y' };
    for (let i = 0; i < 200_000; i++) deep = { a: deep };
    const err = thrown(() => secrets.seal(deep, 'configuration')) as DomainError;
    expect(err).toBeInstanceOf(DomainError);
    expect([err.kind, err.message]).toEqual(['invalid', 'The configuration is nested too deeply.']);
  });

  it('without a key: keeps encrypted values, refuses plain # values with 503, and cannot decrypt', () => {
    const keyless = new Secrets(undefined);
    const encrypted = secrets.seal({ '#a': 'v' }, 'c');
    expect(keyless.seal(encrypted, 'configuration')).toBe(encrypted);
    expect(keyless.seal({ plain: 'no secrets' }, 'configuration')).toEqual({ plain: 'no secrets' });
    const err = thrown(() => keyless.seal({ '#a': 'v' }, 'configuration')) as DomainError;
    expect([err.kind, err.message]).toEqual(['unavailable', 'Cannot encrypt "configuration.#a": This node has no encryption key: set SLUICE_ENCRYPTION_KEY (the same on every node of the cluster) and restart it.']);
    expect(thrown(() => keyless.reveal(encrypted, 'configuration'))).toBeInstanceOf(SecretUnavailableError);
  });

  it('decrypts for a job, collecting the plain values, and fails with a clear message on another key', () => {
    const revealed = new Set<string>();
    const stored = secrets.seal({ parameters: { '#p': 'pw', legacy: { '#old': 'saved before encryption' } } }, 'configuration');
    // A plain value stored before encryption existed is handed over as it is.
    (stored.parameters.legacy as Record<string, string>)['#old'] = 'saved before encryption';
    expect(secrets.reveal(stored, 'configuration', revealed)).toEqual({ parameters: { '#p': 'pw', legacy: { '#old': 'saved before encryption' } } });
    expect([...revealed].sort()).toEqual(['pw', 'saved before encryption']);
    const err = thrown(() => new Secrets(new ValueCipher(keyB)).reveal(stored, 'configuration'));
    expect(err).toBeInstanceOf(SecretUnavailableError);
    expect(err.message).toBe(`The value of "configuration.parameters.#p" cannot be decrypted: it was encrypted with another key (key id ${keyIdOf(keyA)}; this node's key id is ${keyIdOf(keyB)}). Set the key it was encrypted with (SLUICE_ENCRYPTION_KEY), or save the value again.`);
  });

  it('re-encrypts stored values: plain ones at start, a replaced key\'s at rotation, and counts what it cannot read', () => {
    const old = new Secrets(new ValueCipher(keyA));
    const stored = { '#plain': 'p', '#old': old.seal({ '#v': 'o' }, 'c')['#v'], '#foreign': new ValueCipher(keyB).encrypt('f') };
    const count = (): ResealCount => ({ encrypted: 0, unreadable: [] });

    const start = count();
    const afterStart = old.reseal(stored, 'configs/c/1/configuration', 'plain', start);
    expect(afterStart['#old']).toBe(stored['#old']);
    expect(old.reveal({ '#plain': afterStart['#plain'] }, 'c')).toEqual({ '#plain': 'p' });
    expect(start.encrypted).toBe(1);
    expect(start.unreadable).toEqual([`configs/c/1/configuration.#foreign (it was encrypted with another key (key id ${keyIdOf(keyB)}; this node's key id is ${keyIdOf(keyA)}))`]);

    const keyC = parseEncryptionKey(generateEncryptionKey());
    const rotating = new Secrets(new ValueCipher(keyC, [keyA]));
    const rotation = count();
    const rotated = rotating.reseal(afterStart, 'x', 'rotate', rotation);
    expect(rotation.encrypted).toBe(2);
    expect(encryptedKeyId(rotated['#plain'])).toBe(keyIdOf(keyC));
    expect(encryptedKeyId(rotated['#old'])).toBe(keyIdOf(keyC));
    expect(rotated['#foreign']).toBe(stored['#foreign']);
    expect(new Secrets(new ValueCipher(keyC)).reveal({ '#plain': rotated['#plain'], '#old': rotated['#old'] }, 'x')).toEqual({ '#plain': 'p', '#old': 'o' });
    // Done again, it changes nothing.
    const twice = count();
    expect(rotating.reseal({ '#plain': rotated['#plain'] }, 'x', 'rotate', twice)).toEqual({ '#plain': rotated['#plain'] });
    expect(twice.encrypted).toBe(0);

    const discard = count();
    const discarded = rotating.reseal(rotated, 'x', 'rotate-discard', discard);
    expect(new Secrets(new ValueCipher(keyC)).reveal({ '#foreign': discarded['#foreign'] }, 'x')).toEqual({ '#foreign': '' });
    expect(discard.unreadable).toHaveLength(1);
  });
});

describe("a node's key", () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'sluice-keys-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('is generated into the data directory on the first start, mode 0600, and kept', () => {
    const dataDir = dir();
    const first = resolveEncryptionKeys({ dataDir, cluster: false });
    expect(first.source).toBe('generated');
    const file = join(dataDir, ENCRYPTION_KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toMatch(/^[A-Za-z0-9+/]{43}=\n$/);
    const second = resolveEncryptionKeys({ dataDir, cluster: false });
    expect(second.source).toBe('file');
    expect(second.cipher!.keyId).toBe(first.cipher!.keyId);
    // Concurrent first starts end with one key: the file is created once (link), not overwritten.
    const other = dir();
    const keys = Array.from({ length: 5 }, () => resolveEncryptionKeys({ dataDir: other, cluster: false }).cipher!.keyId);
    expect(new Set(keys).size).toBe(1);
  });

  it('comes from the option first; a cluster node does not generate one', () => {
    const dataDir = dir();
    expect(resolveEncryptionKeys({ dataDir, key: keyA, cluster: true })).toMatchObject({ source: 'option' });
    expect(resolveEncryptionKeys({ dataDir, cluster: true })).toEqual({ source: 'none' });
    expect(readKeyFile(dataDir)).toBeUndefined();
  });

  it('a key file that cannot be read is a configuration error', () => {
    const dataDir = dir();
    writeFileSync(join(dataDir, ENCRYPTION_KEY_FILE), 'short\n');
    expect(() => resolveEncryptionKeys({ dataDir, cluster: false })).toThrow(ConfigError);
    expect(() => resolveEncryptionKeys({ dataDir, cluster: false })).toThrow(/^The encryption key in .*encryption-key must be 32 bytes/);
  });

  it("is checked against the project's key: the first records it, another one is refused", async () => {
    const store = new LmdbMetadataStore(dir());
    try {
      checkProjectKey(store, undefined);
      expect(projectKeyId(store)).toBeUndefined();
      checkProjectKey(store, new ValueCipher(keyA));
      expect(projectKeyId(store)).toBe(keyIdOf(keyA));
      checkProjectKey(store, new ValueCipher(keyA));
      checkProjectKey(store, new ValueCipher(keyB, [keyA]));
      const err = thrown(() => checkProjectKey(store, new ValueCipher(keyB)));
      expect(err).toBeInstanceOf(ConfigError);
      expect(err.message).toContain(`this node's encryption key (key id ${keyIdOf(keyB)}) is not the project's (key id ${keyIdOf(keyA)})`);
    } finally {
      await store.close();
    }
  });
});
