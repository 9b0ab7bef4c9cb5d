/**
 * Encryption of single configuration values (the `#` keys of configurations, rows, variables,
 * state and job `configData`): AES-256-GCM from node:crypto, a random IV per value, answered as
 * `KBC::ProjectSecure::<base64>` as the reference's ciphertexts look. The base64 holds
 *
 *   version (1 byte, 1) | key id (8 bytes) | IV (12 bytes) | GCM tag (16 bytes) | ciphertext
 *
 * The version and key id are authenticated with the value (GCM's additional data): a value
 * cannot be moved to another key's header. The key id (an HMAC of a fixed text under the key)
 * names the key without revealing it, so a value encrypted with another key is told apart from
 * an altered one, and a key ring (the current key and those it replaced) finds its key.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

export const ENCRYPTED_PREFIX = 'KBC::ProjectSecure::';

const VERSION = 1;
const KEY_BYTES = 32;
const KEY_ID_BYTES = 8;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A key given in the wrong form; the message never contains the key. */
export class InvalidKeyError extends Error {}

/** Why a value could not be decrypted. */
export type CipherFailure = 'malformed' | 'unknownKey' | 'tampered';

export class CipherError extends Error {
  constructor(readonly reason: CipherFailure, message: string, readonly keyId?: string) {
    super(message);
  }
}

/** Whether `value` is in the encrypted form (it may still be invalid). */
export const isEncrypted = (value: unknown): value is string => typeof value === 'string' && value.startsWith(ENCRYPTED_PREFIX);

/**
 * A key as written in SLUICE_ENCRYPTION_KEY or the key file: 32 bytes as base64 (44
 * characters, also base64url) or hex (64 characters).
 */
export function parseEncryptionKey(text: string): Buffer {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  const bytes = /^[A-Za-z0-9+/_-]+={0,2}$/.test(t) ? Buffer.from(t, 'base64') : undefined;
  if (bytes?.length === KEY_BYTES) return bytes;
  const what = bytes ? `${t.length} characters, ${bytes.length} bytes as base64` : `${t.length} characters, neither base64 nor hex`;
  throw new InvalidKeyError(`must be 32 bytes written as base64 (44 characters) or hex (64 characters), got ${what}; generate one with "openssl rand -base64 32"`);
}

/** A new random key, as base64. */
export function generateEncryptionKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/** The key's id: hex of the first 8 bytes of HMAC-SHA256(key, a fixed text). */
export function keyIdOf(key: Buffer): string {
  return createHmac('sha256', key).update('sluice encryption key id').digest().subarray(0, KEY_ID_BYTES).toString('hex');
}

interface Envelope {
  header: Buffer;
  keyId: string;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

function open(value: string): Envelope {
  const body = value.slice(ENCRYPTED_PREFIX.length);
  if (body.length % 4 !== 0 || !BASE64.test(body)) {
    throw new CipherError('malformed', 'it is not an encrypted value of Sluice (not base64 after the prefix)');
  }
  const bytes = Buffer.from(body, 'base64');
  if (bytes.length < HEADER_BYTES + IV_BYTES + TAG_BYTES || bytes[0] !== VERSION) {
    throw new CipherError('malformed', 'it is not an encrypted value of Sluice (unknown format)');
  }
  return {
    header: bytes.subarray(0, HEADER_BYTES),
    keyId: bytes.subarray(1, HEADER_BYTES).toString('hex'),
    iv: bytes.subarray(HEADER_BYTES, HEADER_BYTES + IV_BYTES),
    tag: bytes.subarray(HEADER_BYTES + IV_BYTES, HEADER_BYTES + IV_BYTES + TAG_BYTES),
    ciphertext: bytes.subarray(HEADER_BYTES + IV_BYTES + TAG_BYTES),
  };
}

/** The id of the key a value was encrypted with; throws CipherError when it is not one. */
export function encryptedKeyId(value: string): string {
  return open(value).keyId;
}

/**
 * Encrypts with the current key; decrypts with any key of the ring (the current one and the
 * ones it replaced, during a rotation).
 */
export class ValueCipher {
  readonly keyId: string;
  private readonly keys = new Map<string, Buffer>();
  private readonly header: Buffer;

  constructor(private readonly current: Buffer, previous: readonly Buffer[] = []) {
    if (current.length !== KEY_BYTES) throw new InvalidKeyError(`must be 32 bytes, got ${current.length}`);
    this.keyId = keyIdOf(current);
    for (const key of [current, ...previous]) if (!this.keys.has(keyIdOf(key))) this.keys.set(keyIdOf(key), key);
    this.header = Buffer.concat([Buffer.from([VERSION]), Buffer.from(this.keyId, 'hex')]);
  }

  /** The ids of the keys this cipher decrypts with, the current one first. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  encrypt(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current, iv);
    cipher.setAAD(this.header);
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ENCRYPTED_PREFIX + Buffer.concat([this.header, iv, cipher.getAuthTag(), ciphertext]).toString('base64');
  }

  /** The plain value; throws CipherError (malformed, unknown key, altered). */
  decrypt(value: string): string {
    if (!isEncrypted(value)) throw new CipherError('malformed', `it does not start with "${ENCRYPTED_PREFIX}"`);
    const envelope = open(value);
    const key = this.keys.get(envelope.keyId);
    if (!key) {
      throw new CipherError('unknownKey', `it was encrypted with another key (key id ${envelope.keyId}; this node's key id is ${this.keyId})`, envelope.keyId);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, envelope.iv);
      decipher.setAAD(envelope.header);
      decipher.setAuthTag(envelope.tag);
      return Buffer.concat([decipher.update(envelope.ciphertext), decipher.final()]).toString('utf8');
    } catch {
      throw new CipherError('tampered', 'it was altered (its authentication failed)', envelope.keyId);
    }
  }
}
