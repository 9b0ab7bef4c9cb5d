/** Pure parts of the job queue: request checks, job-level variable sources, rows, search, transitions. */
import { describe, expect, it } from 'vitest';
import { arrayReplaceRecursive, jobDefinitions } from '../../../src/queue/job-definitions.js';
import { jobVariableSource, parseJobRequest } from '../../../src/queue/job-request.js';
import { canTransition, type Job } from '../../../src/queue/job-model.js';
import { normaliseQuery, searchJobs } from '../../../src/queue/job-search.js';
import type { ConfigurationWithRows } from '../../../src/storage/configurations/model.js';

const noVars = { variableValuesId: null, variableValuesData: [] };

describe('POST /jobs body', () => {
  it('defaults mode to run and keeps the fields', () => {
    expect(parseJobRequest({ component: 'c', config: 123, configRowIds: ['1', 2], tag: '1.0' })).toMatchObject({
      component: 'c', mode: 'run', config: '123', configRowIds: ['1', '2'], tag: '1.0', configData: null,
    });
  });

  it('rejects what the Queue API rejects', () => {
    expect(() => parseJobRequest([])).toThrow('The request body must be a JSON object.');
    expect(() => parseJobRequest({})).toThrow('The child config "component" under "job" must be configured.');
    expect(() => parseJobRequest({ component: 'c', mode: 'x' })).toThrow('Mode must be one of "run", "forceRun" or "debug".');
    expect(() => parseJobRequest({ component: 'c', variableValuesId: '1', variableValuesData: { values: [{ name: 'a', value: 'b' }] } }))
      .toThrow('Provide either "variableValuesId" or "variableValuesData", but not both.');
  });
});

describe('job-level variable sources', () => {
  it('takes the first source that names values: body, configData, stored configuration', () => {
    const stored = { variableValuesId: 'stored' };
    expect(jobVariableSource({ variableValuesId: 'body', variableValuesData: [] }, { variableValuesId: 'data' }, stored).variableValuesId).toBe('body');
    expect(jobVariableSource(noVars, { variableValuesId: 'data' }, stored).variableValuesId).toBe('data');
    expect(jobVariableSource(noVars, null, stored).variableValuesId).toBe('stored');
    expect(jobVariableSource(noVars, null, { variableValuesData: { values: [{ name: 'a', value: 'b' }] } }))
      .toEqual({ variableValuesId: null, variableValuesData: [{ name: 'a', value: 'b' }] });
    expect(jobVariableSource(noVars, null, {})).toEqual({ variableValuesId: null, variableValuesData: [] });
  });
});

describe('rows', () => {
  it('merges like array_replace_recursive (lists by index)', () => {
    expect(arrayReplaceRecursive({ a: 1, b: { c: [1, 2, 3], d: 'x' } }, { b: { c: [9], e: 'y' } }))
      .toEqual({ a: 1, b: { c: [9, 2, 3], d: 'x', e: 'y' } });
    expect(arrayReplaceRecursive({ a: { b: 1 } }, { a: 'scalar' })).toEqual({ a: 'scalar' });
  });

  const row = (id: string, configuration: object, isDisabled = false) => ({
    id, name: '', description: '', configuration, state: {}, isDisabled, version: 1, created: '', creatorToken: { id: 1, description: '' }, changeDescription: '',
  });
  const config = (rows: ReturnType<typeof row>[]) => ({ configuration: { parameters: { a: 1, b: 2 } }, state: {}, rows }) as unknown as ConfigurationWithRows;

  it('makes one definition per enabled (or chosen) row, or one without rows', () => {
    expect(jobDefinitions(config([]), null, [])).toEqual([{ rowId: null, configuration: { parameters: { a: 1, b: 2 } }, state: {} }]);
    const rows = [row('r1', { parameters: { b: 3 } }), row('r2', {}, true)];
    expect(jobDefinitions(config(rows), null, []).map((d) => [d.rowId, d.configuration])).toEqual([['r1', { parameters: { a: 1, b: 3 } }]]);
    expect(jobDefinitions(config(rows), null, ['r2']).map((d) => d.rowId)).toEqual(['r2']);
    expect(jobDefinitions(config([row('r', {}, true)]), null, [])).toEqual([]);
    expect(jobDefinitions(config(rows), { parameters: { inline: true } }, [])).toEqual([{ rowId: null, configuration: { parameters: { inline: true } }, state: {} }]);
  });
});

describe('statuses', () => {
  it('follows the reference diagram', () => {
    expect(canTransition('created', 'processing')).toBe(true);
    expect(canTransition('processing', 'success')).toBe(true);
    expect(canTransition('processing', 'terminating')).toBe(true);
    expect(canTransition('terminating', 'terminated')).toBe(true);
    expect(canTransition('success', 'error')).toBe(false);
    expect(canTransition('created', 'success')).toBe(false);
  });
});

describe('search', () => {
  const job = (id: string, patch: Partial<Job> = {}): Job => ({
    id, runId: id, parentRunId: '', token: { id: '1', description: 'm' }, status: 'success', desiredStatus: 'processing', mode: 'run',
    component: 'c', config: '1', configData: null, configRowIds: [], tag: null, branchId: null, variableValuesId: null,
    variableValuesData: { values: [] }, createdTime: `2026-01-0${id}T00:00:00.000Z`, startTime: null, endTime: null, processingMs: 0, result: {},
    ...patch,
  });
  const jobs = [job('1'), job('2', { status: 'error' }), job('3', { component: 'd' })];

  it('normalises repeated x[] parameters', () => {
    expect(normaliseQuery({ 'status[]': ['a', 'b'], limit: '5' })).toEqual({ status: ['a', 'b'], limit: ['5'] });
  });

  it('filters, sorts and pages', () => {
    expect(searchJobs(jobs, {}).map((j) => j.id)).toEqual(['3', '2', '1']);
    expect(searchJobs(jobs, { 'status[]': ['success'] }).map((j) => j.id)).toEqual(['3', '1']);
    expect(searchJobs(jobs, { component: 'c', sortOrder: 'asc' }).map((j) => j.id)).toEqual(['1', '2']);
    expect(searchJobs(jobs, { createdTimeFrom: '2026-01-02', limit: '1' }).map((j) => j.id)).toEqual(['3']);
    expect(searchJobs(jobs, { offset: '1', limit: '1' }).map((j) => j.id)).toEqual(['2']);
    expect(searchJobs(jobs, { branchId: 'null' })).toHaveLength(3);
    expect(() => searchJobs(jobs, { sortBy: 'colour' })).toThrow(/Invalid "sortBy"/);
    expect(() => searchJobs(jobs, { createdTimeFrom: 'yesterday-ish' })).toThrow(/not a date/);
    // Keys named like Object.prototype's are unknown keys, not its members (the fuzz found a 500).
    const proto = JSON.parse('{"__proto__": "/x", "constructor": "y", "toString": "z"}') as Record<string, string>;
    expect(searchJobs(jobs, proto).map((j) => j.id)).toEqual(['3', '2', '1']);
    expect(() => searchJobs(jobs, { sortBy: '__proto__' })).toThrow(/Invalid "sortBy"/);
    expect(() => searchJobs(jobs, { sortBy: 'toString' })).toThrow(/Invalid "sortBy"/);
  });
});
