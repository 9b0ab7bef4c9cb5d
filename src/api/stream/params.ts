import { ApiError } from '../../http/errors.js';
import { paginate } from '../../definition/repository.js';
import type { Version } from '../../model/definition.js';
import { versionView } from './views.js';
import type { VersionsAnswer } from '../../contract/stream-sources.js';

/** Query and path values parsed by hand: their error messages follow the reference's (Goa). */
function integer(name: string, raw: string): number | undefined {
  return /^-?\d+$/.test(raw) ? Number(raw) : undefined;
}

export function parseLimit(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 100;
  const n = integer('limit', raw);
  if (n === undefined) throw new ApiError(400, 'invalidFieldType', `Invalid value "${raw}" for "limit", must be a integer.`);
  if (n < 1) throw new ApiError(400, 'invalidRange', `Limit must be greater or equal than 1 but got value ${n}.`);
  if (n > 100) throw new ApiError(400, 'invalidRange', `Limit must be lesser or equal than 100 but got value ${n}.`);
  return n;
}

export function parseVersionNumber(raw: string): number {
  const n = integer('versionNumber', raw);
  if (n === undefined) {
    throw new ApiError(400, 'invalidFieldType', `Invalid value "${raw}" for "versionNumber", must be a integer; versionNumber must be greater or equal than 1 but got value 0.`);
  }
  if (n < 1) throw new ApiError(400, 'invalidRange', `VersionNumber must be greater or equal than 1 but got value ${n}.`);
  return n;
}

export function parseBool(name: string, raw: string | undefined): boolean {
  if (raw === undefined || raw === '') return false;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ApiError(400, 'invalidFieldType', `Invalid value "${raw}" for "${name}", must be a boolean.`);
}

export interface PagingQuery {
  afterId?: string;
  limit?: string;
}

export const pagingQuerySchema = {
  type: 'object',
  properties: {
    afterId: { type: 'string', description: 'Return items with an id greater than this one.' },
    limit: { type: 'string', description: 'Page size, 1 to 100 (default 100).' },
  },
} as const;

/** Version lists page by the zero-padded version number; "2" and "0000000002" mean the same. */
export function versionAfterId(raw: string | undefined): string {
  if (raw === undefined || raw === '') return '';
  return /^\d+$/.test(raw) ? raw.padStart(10, '0') : raw;
}

/** The EntityVersions answer: versions page by zero-padded number, counted after `afterId`. */
export function versionsPage(versions: Version[], query: PagingQuery): VersionsAnswer {
  const limit = parseLimit(query.limit);
  const { items, page } = paginate(versions, (v) => String(v.number).padStart(10, '0'), versionAfterId(query.afterId), limit, 'afterId');
  return { versions: items.map(versionView), page: { ...page, afterId: query.afterId ?? '' } };
}
