/**
 * Component state: `in/state.json` gives `time.previousStart` (for the
 * `{"time": "previousStart"}` function context) and the JSON parser's structure of the previous
 * run (version 3: it seeds column names and order); `out/state.json` carries both forward.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../errors.js';
import { isObject, type Json, type JsonObject } from '../php.js';

/** `in/state.json`, or `{}` when there is none. */
export async function readState(dataDir: string): Promise<JsonObject> {
  let text: string;
  try {
    text = await readFile(join(dataDir, 'in', 'state.json'), 'utf8');
  } catch {
    return {};
  }
  try {
    const state = JSON.parse(text) as Json;
    return isObject(state) ? state : {};
  } catch (err) {
    throw new UserError(`in/state.json is not valid JSON: ${(err as Error).message}`);
  }
}

/** The `time` function context: previousStart from the state (0 without one), currentStart now. */
export function stateTime(state: JsonObject, currentStart: number): Record<string, Json> {
  const time = isObject(state.time) ? state.time : {};
  return { previousStart: typeof time.previousStart === 'number' ? time.previousStart : 0, currentStart };
}

export interface StoredStructure {
  /** 3: the current parser's structure; 2: the legacy parser's (php-jsonparser 2.x). */
  version: 2 | 3;
  struct: JsonObject;
}

/**
 * The parser structure stored by the previous run, if any (juicer's Json parser: a non-empty
 * `json_parser.struct` with `json_parser.structVersion` 2 or 3). Version 2 selects the legacy
 * parser whatever `compatLevel` says.
 */
export function stateStructure(state: JsonObject): StoredStructure | undefined {
  const struct = state['json_parser.struct'];
  const version = state['json_parser.structVersion'];
  if (!isObject(struct) || Object.keys(struct).length === 0) return undefined;
  if (version === 2 || version === 3) return { version, struct };
  return undefined;
}

export async function writeState(
  dataDir: string,
  previous: JsonObject,
  currentStart: number,
  struct: JsonObject,
  structVersion: 2 | 3 = 3,
): Promise<void> {
  const state: JsonObject = {
    ...previous,
    time: { previousStart: currentStart },
    'json_parser.struct': struct,
    'json_parser.structVersion': structVersion,
  };
  await mkdir(join(dataDir, 'out'), { recursive: true });
  await writeFile(join(dataDir, 'out', 'state.json'), JSON.stringify(state));
}
