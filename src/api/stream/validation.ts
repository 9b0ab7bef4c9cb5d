import type { FastifyError } from 'fastify';
import { ApiError, sentence } from '../../http/errors.js';

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, any>;
  data?: unknown;
  message?: string;
}

/** Go's %#v of a JSON value, as Goa prints offending values. */
function goValue(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? 'nil';
}

/** "/table/mapping/columns/0/name" in body -> "body.table.mapping.columns[0].name" */
function fieldName(context: string, instancePath: string): string {
  let out = context;
  for (const part of instancePath.split('/').slice(1)) {
    out += /^\d+$/.test(part) ? `[${part}]` : `.${part}`;
  }
  return out;
}

/**
 * Translates a schema validation failure into the message and error name the reference
 * (a Goa service) gives for the same input, e.g.
 * `Length of body.name must be greater or equal than 1 but got value "" (len=0)`.
 */
export function goaValidationError(err: FastifyError): ApiError {
  const errors = (err.validation ?? []) as unknown as AjvError[];
  const context = (err.validationContext as string | undefined) ?? 'body';
  const first = errors[0];
  if (!first) return new ApiError(400, 'badRequest', sentence(err.message));
  const field = fieldName(context, first.instancePath);
  const v = first.data;
  switch (first.keyword) {
    case 'required': {
      const missing = first.params.missingProperty as string;
      return new ApiError(400, 'missingField', sentence(`"${missing}" is missing from ${fieldName(context, first.instancePath)}`));
    }
    case 'enum': {
      const allowed = (first.params.allowedValues as unknown[]).map((x) => JSON.stringify(x)).join(', ');
      return new ApiError(400, 'invalidEnumValue', sentence(`value of ${field} must be one of ${allowed} but got value ${goValue(v)}`));
    }
    case 'minLength':
    case 'minItems':
      return new ApiError(400, 'invalidLength', sentence(
        `length of ${field} must be greater or equal than ${first.params.limit} but got value ${goValue(v)} (len=${lengthOf(v)})`,
      ));
    case 'maxLength':
    case 'maxItems':
      return new ApiError(400, 'invalidLength', sentence(
        `length of ${field} must be lesser or equal than ${first.params.limit} but got value ${goValue(v)} (len=${lengthOf(v)})`,
      ));
    case 'minimum':
      return new ApiError(400, 'invalidRange', sentence(`${field} must be greater or equal than ${first.params.limit} but got value ${goValue(v)}`));
    case 'maximum':
      return new ApiError(400, 'invalidRange', sentence(`${field} must be lesser or equal than ${first.params.limit} but got value ${goValue(v)}`));
    case 'type':
      return new ApiError(400, 'invalidFieldType', sentence(`invalid value ${goValue(v)} for "${field}", must be a ${first.params.type}`));
    case 'additionalProperties':
      return new ApiError(400, 'badRequest', sentence(`unknown field "${fieldName(context, first.instancePath)}.${first.params.additionalProperty}"`));
    case 'pattern':
      return new ApiError(400, 'invalidPattern', sentence(`${field} must match the regexp "${first.params.pattern}" but got value ${goValue(v)}`));
    default:
      return new ApiError(400, 'badRequest', sentence(`${field} ${first.message ?? 'is invalid'}`));
  }
}

function lengthOf(v: unknown): number {
  if (typeof v === 'string') return [...v].length;
  if (Array.isArray(v)) return v.length;
  return 0;
}
