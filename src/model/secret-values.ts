/**
 * The `#` values of a JSON document (reference: keys prefixed with `#` hold secrets): the string
 * value of every key that starts with `#`, in objects at any depth, objects inside arrays
 * included. Numbers, booleans, null, arrays and objects under a `#` key are not secrets
 * themselves (an object under one is searched like any other), as the reference's encryptor has it.
 */

/** A key whose string value is a secret. */
export const isSecretKey = (key: string): boolean => key.startsWith('#');

export type JsonPath = readonly (string | number)[];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A copy of `value` in which each `#` string value is replaced by what `fn` answers for it (the
 * parts without such values are shared, not copied). `fn` gets the value and its path.
 */
export function mapSecretValues(value: unknown, fn: (text: string, path: JsonPath) => string): unknown {
  return walk(value, [], fn);
}

function walk(value: unknown, path: (string | number)[], fn: (text: string, path: JsonPath) => string): unknown {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((item, i) => {
      path.push(i);
      const next = walk(item, path, fn);
      path.pop();
      if (next !== item) (out ??= [...value])[i] = next;
    });
    return out ?? value;
  }
  if (!isObject(value)) return value;
  let out: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    path.push(key);
    const next = typeof item === 'string' && isSecretKey(key) ? fn(item, path) : walk(item, path, fn);
    path.pop();
    // defineProperty: a key named "__proto__" (JSON.parse makes it an own key) stays a key.
    if (next !== item) Object.defineProperty(out ??= { ...value }, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return out ?? value;
}

/** Each `#` string value with its path, in document order. */
export function secretValues(value: unknown): { text: string; path: JsonPath }[] {
  const found: { text: string; path: JsonPath }[] = [];
  mapSecretValues(value, (text, path) => {
    found.push({ text, path: [...path] });
    return text;
  });
  return found;
}

/** The value at `path`, or undefined. */
export function valueAt(root: unknown, path: JsonPath): unknown {
  let v = root;
  for (const key of path) {
    if (typeof key === 'number' ? !Array.isArray(v) : !isObject(v)) return undefined;
    v = (v as Record<string | number, unknown>)[key];
  }
  return v;
}

/** `parameters.#password`, `values[0].#token`. */
export function formatPath(path: JsonPath): string {
  return path.reduce<string>((s, k) => (typeof k === 'number' ? `${s}[${k}]` : s === '' ? k : `${s}.${k}`), '');
}

/** What a redacted secret looks like in a log line or a message. */
export const SECRET_MASK = '*****';

/**
 * Values shorter than this are not redacted from text: hiding every "a" of a log would ruin it
 * and show the secret by its absence.
 */
export const MIN_REDACTED_LENGTH = 4;

/** `text` with every occurrence of the secrets (of MIN_REDACTED_LENGTH characters or more) masked. */
export function redactSecrets(text: string, secrets: Iterable<string>): string {
  let out = text;
  // Longest first: a secret that contains another is masked whole.
  for (const secret of [...secrets].filter((s) => s.length >= MIN_REDACTED_LENGTH).sort((a, b) => b.length - a.length)) {
    if (out.includes(secret)) out = out.split(secret).join(SECRET_MASK);
  }
  return out;
}
