/**
 * Variable resolution: choose the values, check them against the
 * declared variables, render the whole configuration as one Mustache template with JSON-string
 * escaping, and fail on placeholders without values. Pure apart from the two reads `store` does.
 */
import { phpJsonError, renderTemplate, renderVault, type ReplacedValue } from './mustache-renderer.js';
import { validateVariableValues, validateVariablesConfiguration, type VariableValue } from './variables-validation.js';

export type JsonObject = Record<string, unknown>;

/** The reads resolution needs, in the job's branch. */
export interface VariablesStore {
  /** The `configuration` of keboola.variables configuration `id`, or undefined when it does not exist. */
  variablesConfiguration(id: string): JsonObject | undefined;
  /** The `configuration` of row `rowId` of that configuration, or undefined. */
  valuesRow(variablesId: string, rowId: string): JsonObject | undefined;
}

export interface VariablesInput {
  /** The component configuration (`variables_id`, `variables_values_id` and the body). */
  configuration: JsonObject;
  /** The job's `variableValuesId`. */
  variableValuesId?: string | null;
  /** The job's `variableValuesData`. */
  variableValuesData?: { values?: Partial<VariableValue>[] } | null;
}

export interface ResolvedVariables {
  configuration: JsonObject;
  /** The replaced variables with their values: the job's `result.variables`. */
  replaced: ReplacedValue[];
  /** Lines for the job log, in order. */
  messages: string[];
}

/** A resolution failure: a user error of the job, its message shown as `result.message`. */
export class VariableResolutionError extends Error {
  override name = 'VariableResolutionError';
}

export const VARIABLES_COMPONENT = 'keboola.variables';

/** PHP's empty(): null, "", "0" and absent are all "not given". */
function given(v: unknown): v is string | number {
  return v !== undefined && v !== null && v !== '' && v !== '0' && v !== 0 && v !== false;
}

export function resolveVariables(input: VariablesInput, store: VariablesStore): ResolvedVariables {
  const inlineValues = input.variableValuesData?.values ?? [];
  const jobValuesId = given(input.variableValuesId) ? String(input.variableValuesId) : undefined;
  if (jobValuesId !== undefined && inlineValues.length > 0) {
    throw new VariableResolutionError('Only one of variableValuesId and variableValuesData can be entered.');
  }

  // Vault placeholders are resolved first, whether or not the configuration uses variables.
  const template = JSON.stringify(input.configuration);
  const vault = renderVault(template);
  const variablesId = given(input.configuration.variables_id) ? String(input.configuration.variables_id) : undefined;
  if (variablesId === undefined) {
    if (vault.missing.length > 0) throw missingPlaceholders(vault.missing);
    return { configuration: input.configuration, replaced: [], messages: [] };
  }

  const variablesConfiguration = store.variablesConfiguration(variablesId);
  if (variablesConfiguration === undefined) {
    throw new VariableResolutionError(`Variable configuration cannot be read: Configuration "${variablesId}" not found`);
  }
  const declared = guard(() => validateVariablesConfiguration(variablesConfiguration));

  const messages: string[] = [];
  let values: { name: string; value: string }[];
  if (inlineValues.length > 0) {
    messages.push('Replacing variables using inline values.');
    values = inlineValues.map((v) => ({ name: String(v.name ?? ''), value: String(v.value ?? '') }));
  } else {
    const defaultId = given(input.configuration.variables_values_id) ? String(input.configuration.variables_values_id) : undefined;
    const rowId = jobValuesId ?? defaultId;
    if (rowId === undefined) {
      throw new VariableResolutionError(`No variable values provided for variables configuration "${variablesId}".`);
    }
    messages.push(jobValuesId !== undefined
      ? `Replacing variables using values with ID: "${rowId}".`
      : `Replacing variables using default values with ID: "${rowId}"`);
    const row = store.valuesRow(variablesId, rowId);
    if (row === undefined) {
      throw new VariableResolutionError(`Cannot read variable values "${rowId}" of variables configuration "${variablesId}".`);
    }
    values = guard(() => validateVariableValues(row));
  }

  const byName = new Map<string, string>();
  for (const v of values) {
    if (v.name === '') throw new VariableResolutionError('Variable name cannot be empty.');
    byName.set(v.name, v.value);
  }
  for (const d of declared) {
    if (!byName.has(d.name)) throw new VariableResolutionError(`No value provided for variable "${d.name}".`);
  }

  const rendered = renderTemplate(vault.text, byName);
  const missing = [...vault.missing, ...rendered.missing];
  if (missing.length > 0) throw missingPlaceholders(missing);
  let configuration: JsonObject;
  try {
    configuration = JSON.parse(rendered.text) as JsonObject;
  } catch (err) {
    throw new VariableResolutionError(`Variable replacement resulted in invalid configuration, error: ${phpJsonError(err)}`);
  }
  if (rendered.replaced.length > 0) {
    messages.push(`Replaced values for variables: ${rendered.replaced.map((r) => r.name).join(', ')}`);
  }
  return { configuration, replaced: rendered.replaced, messages };
}

function missingPlaceholders(names: string[]): VariableResolutionError {
  return new VariableResolutionError(`Missing values for placeholders: ${names.join(', ')}`);
}

/** Validation errors of the variables' own configurations are resolution errors too. */
function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new VariableResolutionError((err as Error).message);
  }
}
