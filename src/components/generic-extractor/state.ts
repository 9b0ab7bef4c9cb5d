/**
 * Component state (reference §13.3): `in/state.json` gives `time.previousStart` (for the
 * `{"time": "previousStart"}` function context) and the JSON parser's structure of the previous
 * run (version 3: it seeds column names and order); `out/state.json` carries both forward.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../contract.js';
import { isObject, type Json, type JsonObject } from './php.js';

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

/** The stored structure, if it is the current parser's (version 3); version 2 is the legacy parser's. */
export function stateStructure(state: JsonObject): Json | undefined {
  return state['json_parser.structVersion'] === 3 ? state['json_parser.struct'] : undefined;
}

export async function writeState(dataDir: string, previous: JsonObject, currentStart: number, struct: JsonObject): Promise<void> {
  const state: JsonObject = { ...previous, time: { previousStart: currentStart }, 'json_parser.struct': struct, 'json_parser.structVersion': 3 };
  await mkdir(join(dataDir, 'out'), { recursive: true });
  await writeFile(join(dataDir, 'out', 'state.json'), JSON.stringify(state));
}
