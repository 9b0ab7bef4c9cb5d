/**
 * Secrets at rest: the `#` values of configurations, rows, variables, state and job
 * `configData` are encrypted when they are saved (`seal`), stored and answered only encrypted,
 * and decrypted only when a job hands its configuration to the component's process (`reveal`).
 * A node without a key (cluster mode without SLUICE_ENCRYPTION_KEY) stores and answers what is
 * already encrypted, but refuses a plain `#` value (503) and fails a job that needs one.
 */
import { DomainError } from '../domain-errors.js';
import { formatPath, mapSecretValues, valueAt, type JsonPath } from '../model/secret-values.js';
import { CipherError, encryptedKeyId, isEncrypted, type ValueCipher } from '../model/value-cipher.js';

/** A value a job needs cannot be decrypted here: the job fails with this message. */
export class SecretUnavailableError extends Error {
  override name = 'SecretUnavailableError';
}

/** What a pass over stored values found (migration and rotation). */
export interface ResealCount {
  /** Values encrypted now: plain ones, and (rotation) those of a replaced key. */
  encrypted: number;
  /** Values no key of the ring decrypts (another key, altered, not Sluice's), with where they are. */
  unreadable: string[];
}

export type ResealMode =
  /** Encrypt plain values only (a data directory from before encryption). */
  | 'plain'
  /** Also re-encrypt what a replaced key of the ring encrypted (key rotation). */
  | 'rotate'
  /** As rotate, and empty what no key of the ring decrypts (the key was lost). */
  | 'rotate-discard';

const where = (what: string, path: JsonPath) => formatPath([what, ...path]);

export class Secrets {
  /**
   * `cipher`: this node's key ring; undefined when it has none. `noKey`: why, said to a client
   * whose request needs it.
   */
  constructor(
    private readonly cipher: ValueCipher | undefined,
    private readonly noKey = 'This node has no encryption key: set SLUICE_ENCRYPTION_KEY (the same on every node of the cluster) and restart it.',
  ) {}

  /** The current key's id; undefined without a key. */
  get keyId(): string | undefined {
    return this.cipher?.keyId;
  }

  /**
   * `value` with every plain `#` value encrypted; `what` names the field in errors
   * ("configuration", "state", "configData"). A value already encrypted is kept as it is once
   * checked (a value that is not a valid one of this project's key is refused: 400). Where
   * `previous` (the stored version) holds the same plain value at the same path, its ciphertext
   * is kept, so that saving a configuration unchanged changes nothing.
   */
  seal<T>(value: T, what: string, previous?: unknown): T {
    return deepGuard(what, () => mapSecretValues(value, (text, path) => {
      if (isEncrypted(text)) {
        this.check(text, what, path);
        return text;
      }
      if (!this.cipher) throw new DomainError('unavailable', 'encryption.noKey', `Cannot encrypt "${where(what, path)}": ${this.noKey}`);
      const before = previous === undefined ? undefined : valueAt(previous, path);
      if (isEncrypted(before) && this.tryDecrypt(before) === text) return before;
      return this.cipher.encrypt(text);
    }) as T);
  }

  /**
   * `value` with every `#` value decrypted, for the component's process only; each plain value
   * is added to `revealed` (the job's log hides them). A plain `#` value (saved before
   * encryption) is handed over as it is. Throws SecretUnavailableError.
   */
  reveal<T>(value: T, what: string, revealed?: Set<string>): T {
    return mapSecretValues(value, (text, path) => {
      if (!isEncrypted(text)) {
        revealed?.add(text);
        return text;
      }
      if (!this.cipher) throw new SecretUnavailableError(`The value of "${where(what, path)}" cannot be decrypted: ${this.noKey}`);
      try {
        const plain = this.cipher.decrypt(text);
        revealed?.add(plain);
        return plain;
      } catch (err) {
        if (!(err instanceof CipherError)) throw err;
        const hint = err.reason === 'unknownKey'
          ? ' Set the key it was encrypted with (SLUICE_ENCRYPTION_KEY), or save the value again.'
          : ' Save the value again.';
        throw new SecretUnavailableError(`The value of "${where(what, path)}" cannot be decrypted: ${err.message}.${hint}`);
      }
    }) as T;
  }

  /**
   * A stored value, re-encrypted as `mode` asks; `count` adds what was done. Never throws for a
   * value it cannot read: it counts it (and, with rotate-discard, empties it).
   */
  reseal<T>(value: T, what: string, mode: ResealMode, count: ResealCount): T {
    const cipher = this.cipher;
    if (!cipher) return value;
    return mapSecretValues(value, (text, path) => {
      if (!isEncrypted(text)) {
        count.encrypted++;
        return cipher.encrypt(text);
      }
      // At start only the key id is read: decrypting every stored value would slow every start.
      if (mode === 'plain' && this.knownKey(text)) return text;
      let plain: string;
      try {
        plain = cipher.decrypt(text);
      } catch (err) {
        if (!(err instanceof CipherError)) throw err;
        count.unreadable.push(`${where(what, path)} (${err.message})`);
        if (mode !== 'rotate-discard') return text;
        count.encrypted++;
        return cipher.encrypt('');
      }
      if (mode === 'plain' || encryptedKeyId(text) === cipher.keyId) return text;
      count.encrypted++;
      return cipher.encrypt(plain);
    }) as T;
  }

  /** Whether the value names a key of the ring (its form is checked, not its authenticity). */
  private knownKey(text: string): boolean {
    try {
      return this.cipher?.keyIds.includes(encryptedKeyId(text)) ?? false;
    } catch {
      return false;
    }
  }

  private check(text: string, what: string, path: JsonPath): void {
    try {
      // Without a key only the form can be checked; the value stays encrypted either way.
      if (this.cipher) this.cipher.decrypt(text);
      else encryptedKeyId(text);
    } catch (err) {
      if (!(err instanceof CipherError)) throw err;
      throw new DomainError('invalid', 'encryption.invalidValue',
        `The value of "${where(what, path)}" starts with "KBC::ProjectSecure::" but is not a valid encrypted value of this project: ${err.message}. ` +
        'Send the plain value to have it encrypted, or the encrypted value exactly as it was answered.');
    }
  }

  private tryDecrypt(text: string): string | undefined {
    try {
      return this.cipher?.decrypt(text);
    } catch {
      return undefined;
    }
  }
}

/** A document nested too deeply to walk is refused like any other invalid input (400, not 500). */
function deepGuard<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof RangeError) throw new DomainError('invalid', 'encryption.invalidValue', `The ${what} is nested too deeply.`);
    throw err;
  }
}
