/**
 * The body of POST /jobs, checked with the Queue API's messages. Pure: the
 * checks that need stored configurations are in JobService.
 */
import { QueueError } from './errors.js';
import type { JobMode } from './job-model.js';
import { InvalidVariablesError, validateInlineValues, type VariableValue } from './variables-validation.js';

export interface JobRequest {
  component: string;
  mode: JobMode;
  config: string | null;
  configRowIds: string[];
  configData: Record<string, unknown> | null;
  tag: string | null;
  branchId: string | null;
  variableValuesId: string | null;
  variableValuesData: VariableValue[];
}

const MODES: readonly JobMode[] = ['run', 'forceRun', 'debug'];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function idString(v: unknown, path: string): string | null {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  throw new QueueError('invalid', `Invalid type for path "job.${path}". Expected "scalar", but got "${Array.isArray(v) ? 'array' : typeof v}".`);
}

export function parseJobRequest(body: unknown): JobRequest {
  if (!isObject(body)) throw new QueueError('invalid', 'The request body must be a JSON object.');
  const component = idString(body.component, 'component');
  if (component === null) throw new QueueError('invalid', 'The child config "component" under "job" must be configured.');
  const mode = body.mode === undefined || body.mode === null || body.mode === '' ? 'run' : body.mode;
  if (!MODES.includes(mode as JobMode)) throw new QueueError('invalid', 'Mode must be one of "run", "forceRun" or "debug".');

  let configRowIds: string[] = [];
  if (body.configRowIds !== undefined && body.configRowIds !== null) {
    if (!Array.isArray(body.configRowIds)) throw new QueueError('invalid', 'Invalid type for path "job.configRowIds". Expected "array", but got "' + typeof body.configRowIds + '".');
    configRowIds = body.configRowIds.map((v, i) => idString(v, `configRowIds.${i}`) ?? '').filter((v) => v !== '');
  }
  let configData: Record<string, unknown> | null = null;
  if (body.configData !== undefined && body.configData !== null) {
    if (Array.isArray(body.configData) && body.configData.length === 0) configData = null;
    else if (!isObject(body.configData)) throw new QueueError('invalid', 'Invalid type for path "job.configData". Expected "array", but got "' + typeof body.configData + '".');
    else configData = Object.keys(body.configData).length === 0 ? null : body.configData;
  }
  const variableValuesId = idString(body.variableValuesId, 'variableValuesId');
  let variableValuesData: VariableValue[] = [];
  if (body.variableValuesData !== undefined && body.variableValuesData !== null) {
    try {
      variableValuesData = validateInlineValues(body.variableValuesData);
    } catch (err) {
      if (err instanceof InvalidVariablesError) throw new QueueError('invalid', err.message);
      throw err;
    }
  }
  if (variableValuesId !== null && variableValuesData.length > 0) {
    throw new QueueError('invalid', 'Provide either "variableValuesId" or "variableValuesData", but not both.');
  }
  const tag = body.tag === undefined || body.tag === null || body.tag === '' ? null : String(body.tag);
  return {
    component,
    mode: mode as JobMode,
    config: idString(body.config, 'config'),
    configRowIds,
    configData,
    tag,
    branchId: idString(body.branchId, 'branchId'),
    variableValuesId,
    variableValuesData,
  };
}

/**
 * The variable values a job keeps: from the first source that names any —
 * the job body, then `configData`, then the root of the stored configuration.
 */
export function jobVariableSource(
  request: Pick<JobRequest, 'variableValuesId' | 'variableValuesData'>,
  configData: Record<string, unknown> | null,
  storedConfiguration: Record<string, unknown> | undefined,
): { variableValuesId: string | null; variableValuesData: VariableValue[] } {
  if (request.variableValuesId !== null || request.variableValuesData.length > 0) {
    return { variableValuesId: request.variableValuesId, variableValuesData: request.variableValuesData };
  }
  for (const source of [configData, storedConfiguration]) {
    if (!source) continue;
    const id = source.variableValuesId;
    const data = source.variableValuesData;
    const values = isObject(data) && Array.isArray(data.values) ? data.values : [];
    const hasId = id !== undefined && id !== null && id !== '';
    if (hasId || values.length > 0) {
      let parsed: VariableValue[] = [];
      try {
        parsed = values.length > 0 ? validateInlineValues(data) : [];
      } catch (err) {
        if (err instanceof InvalidVariablesError) throw new QueueError('invalid', err.message);
        throw err;
      }
      return { variableValuesId: hasId ? String(id) : null, variableValuesData: parsed };
    }
  }
  return { variableValuesId: null, variableValuesData: [] };
}
