import type { ConfigurationInput, JsonObject } from '../../storage/configurations/model.js';
import { ApiError } from '../../http/errors.js';
import { StorageValidationError } from './envelope.js';
import { nestedDeeperThan } from '../../http/json-depth.js';

/** The reference's answers to a `configuration` or `state` that is not a JSON object. */
const invalidConfigurationFormat = (detail: string): ApiError =>
  new ApiError(400, 'validation.invalidConfigurationFormat', `Configuration is not a valid JSON object: ${detail}`);

const invalidStateFormat = (detail: string): ApiError =>
  new ApiError(400, 'validation.invalidStateFormat', `State is not a valid JSON object: ${detail}`);

/**
 * Turns a create or update body (JSON, or form-urlencoded where `configuration` and `state` are
 * JSON strings and booleans are "1"/"0") into typed fields. Unknown fields are ignored, as the
 * reference's clients send extra ones; a field of the wrong type is a 400 in the Storage envelope.
 * The configuration service takes the typed fields (storage/configurations/model.ts). A JSON
 * string nested deeper than `maxJsonDepth` is refused as not valid (a JSON body was checked whole
 * by the body parser: json-depth.ts).
 */
export interface ParsedBody extends ConfigurationInput {
  configurationId?: string;
  rowId?: string;
}

export function parseConfigurationBody(body: unknown, validationCode: string, maxJsonDepth: number): ParsedBody {
  const raw = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  const errors: { key: string; message: string }[] = [];
  const out: ParsedBody = {};
  const text = (key: 'name' | 'description' | 'changeDescription' | 'configurationId' | 'rowId') => {
    const v = raw[key];
    if (v === undefined || v === null) return;
    if (typeof v === 'number') out[key] = String(v);
    else if (typeof v === 'string') out[key] = v;
    else errors.push({ key, message: 'This value should be of type string.' });
  };
  text('name');
  text('description');
  text('changeDescription');
  text('configurationId');
  text('rowId');
  if (raw.configuration !== undefined) out.configuration = jsonObject(raw.configuration, maxJsonDepth, invalidConfigurationFormat);
  if (raw.state !== undefined) out.state = jsonObject(raw.state, maxJsonDepth, invalidStateFormat);
  if (raw.isDisabled !== undefined) {
    const b = toBoolean(raw.isDisabled);
    if (b === undefined) errors.push({ key: 'isDisabled', message: 'This value should be of type boolean.' });
    else out.isDisabled = b;
  }
  if (errors.length > 0) throw new StorageValidationError(validationCode, errors);
  return out;
}

/** An object given as is (JSON body) or as a JSON string (form body). PHP's empty `[]` is `{}`. */
function jsonObject(value: unknown, maxDepth: number, error: (detail: string) => Error): JsonObject {
  let v = value;
  if (typeof v === 'string') {
    if (v.trim() === '') return {};
    try {
      v = JSON.parse(v);
    } catch (err) {
      throw error((err as Error).message);
    }
    if (nestedDeeperThan(v, maxDepth)) throw error(`it is nested deeper than ${maxDepth} levels, the limit of this server`);
  }
  if (Array.isArray(v) && v.length === 0) return {};
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw error(`expected a JSON object, got ${Array.isArray(v) ? 'an array' : typeof v}`);
  return v as JsonObject;
}

function toBoolean(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (v === '1' || v === 'true' || v === 1) return true;
  if (v === '0' || v === 'false' || v === '' || v === 0) return false;
  return undefined;
}
