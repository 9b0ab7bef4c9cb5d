/**
 * How a job finds its data in a response body (the data field, then the response filter), as
 * plain values: the end of the run (and the flattening thread) finds a page's data again in its
 * spooled body.
 */
import { locateData, type DataFieldSpec } from './data-path.js';
import type { Json } from '../php.js';
import { applyResponseFilter } from './response-filter.js';

export interface DataFind {
  dataField: DataFieldSpec | null;
  endpoint: string;
  responseFilter: string[];
  responseFilterDelimiter: string;
  compatLevel: number;
  /** PHP's serialize_precision for the filter's JSON: 17, or -1 with the legacy parser. */
  precision: number;
}

/** The data of `body` and the warning about its data field, if any. */
export function locatePageData(body: Json, find: DataFind): { data: Json[]; warning?: string } {
  const located = locateData(body, find.dataField, find.endpoint);
  const data = applyResponseFilter(located.data, find.responseFilter, find.responseFilterDelimiter, find.compatLevel, find.precision);
  return { data, warning: located.warning };
}

export function findData(body: Json, find: DataFind): Json[] {
  return locatePageData(body, find).data;
}
