/**
 * Versions written by every mutating Stream API endpoint, as the reference writes them
 * (keboola-as-code api/service and definition/repository): numbers, descriptions, and the
 * changes that make no version. Also the sink's writing file, which exists as soon as the task
 * that created the sink has finished (the reference opens it with the sink).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;

async function createSource(name: string): Promise<string> {
  const task = await svc.task('POST', `${B()}/sources`, { json: { name, type: 'http' } });
  expect(task.status).toBe('success');
  return task.outputs.sourceId as string;
}

async function createSink(sourceId: string, name: string): Promise<string> {
  const task = await svc.task('POST', `${B()}/sources/${sourceId}/sinks`, {
    json: { name, type: 'table', table: { type: 'keboola', tableId: `in.c-versions.${name.toLowerCase().replace(/\W+/g, '-')}`, mapping: { columns: [{ type: 'body', name: 'body' }] } } },
  });
  expect(task.status).toBe('success');
  return task.outputs.sinkId as string;
}

async function versionsOf(path: string): Promise<Array<{ number: number; description: string }>> {
  const res = await svc.call('GET', `${path}/versions`);
  expect(res.status).toBe(200);
  return (res.json.versions as Array<{ number: number; description: string }>).map(({ number, description }) => ({ number, description }));
}

beforeAll(async () => {
  // No check tick during the tests: what they see is what the tasks did.
  svc = await TestService.start({ args: ['--check-interval', '1h'] });
});
afterAll(async () => {
  await svc.close();
});

describe('source versions', () => {
  it('rotate-secret makes a version "Rotated secret." by the caller', async () => {
    const id = await createSource('Rotated');
    const rotated = await svc.call('POST', `${B()}/sources/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.json.version).toMatchObject({ number: 2, description: 'Rotated secret.', by: { type: 'user', tokenId: '1' } });
    expect((await svc.call('GET', `${B()}/sources/${id}`)).json.version).toMatchObject({ number: 2, description: 'Rotated secret.' });
    expect(await versionsOf(`${B()}/sources/${id}`)).toEqual([
      { number: 1, description: 'New source.' },
      { number: 2, description: 'Rotated secret.' },
    ]);
  });

  it('takes a given changeDescription as it is, also an empty one', async () => {
    const id = await createSource('Described');
    await svc.task('PATCH', `${B()}/sources/${id}`, { json: { name: 'Described 2', changeDescription: '' } });
    await svc.task('PATCH', `${B()}/sources/${id}/settings`, { json: { changeDescription: '', settings: [] } });
    await svc.task('PATCH', `${B()}/sources/${id}`, { json: { name: 'Described 3' } });
    await svc.task('PATCH', `${B()}/sources/${id}/settings`, { json: { settings: [] } });
    expect(await versionsOf(`${B()}/sources/${id}`)).toEqual([
      { number: 1, description: 'New source.' },
      { number: 2, description: '' },
      { number: 3, description: '' },
      { number: 4, description: 'Updated.' },
      { number: 5, description: 'Updated settings.' },
    ]);
  });

  it('makes no version when disabling a disabled source or enabling an enabled one', async () => {
    const id = await createSource('Switched');
    expect((await svc.task('PUT', `${B()}/sources/${id}/enable`)).status).toBe('success');
    expect((await svc.task('PUT', `${B()}/sources/${id}/disable`)).status).toBe('success');
    expect((await svc.task('PUT', `${B()}/sources/${id}/disable`)).result).toBe('Source has been disabled successfully.');
    expect((await svc.task('PUT', `${B()}/sources/${id}/enable`)).status).toBe('success');
    expect(await versionsOf(`${B()}/sources/${id}`)).toEqual([
      { number: 1, description: 'New source.' },
      { number: 2, description: 'Disabled.' },
      { number: 3, description: 'Enabled.' },
    ]);
    // Soft delete makes none; undelete names the version it restores.
    await svc.task('DELETE', `${B()}/sources/${id}`);
    await svc.task('PUT', `${B()}/sources/${id}/undelete`);
    expect((await versionsOf(`${B()}/sources/${id}`)).slice(-1)).toEqual([{ number: 4, description: 'Undeleted to version "3".' }]);
  });
});

describe('sink versions', () => {
  it('takes a given changeDescription as it is and makes no version for a no-op disable or enable', async () => {
    const sourceId = await createSource('Sink Versions');
    const sinkId = await createSink(sourceId, 'Versioned');
    const path = `${B()}/sources/${sourceId}/sinks/${sinkId}`;
    await svc.task('PATCH', path, { json: { name: 'Versioned 2', changeDescription: '' } });
    await svc.task('PATCH', `${path}/settings`, { json: { changeDescription: '', settings: [] } });
    await svc.task('PUT', `${path}/enable`);
    await svc.task('PUT', `${path}/disable`);
    expect((await svc.task('PUT', `${path}/disable`)).result).toBe('Sink has been disabled successfully.');
    await svc.task('PUT', `${path}/enable`);
    await svc.task('PUT', `${path}/versions/1/rollback`);
    expect(await versionsOf(path)).toEqual([
      { number: 1, description: 'New sink.' },
      { number: 2, description: '' },
      { number: 3, description: '' },
      { number: 4, description: 'Disabled.' },
      { number: 5, description: 'Enabled.' },
      { number: 6, description: 'Rollback to version "1".' },
    ]);
  });
});

describe('the writing file of a sink', () => {
  it('is listed right after the task that created the sink, newest first in the aggregation', async () => {
    const sourceId = await createSource('Fresh Files');
    const sinkId = await createSink(sourceId, 'Fresh');
    const files = (await svc.call('GET', `${B()}/sources/${sourceId}/sinks/${sinkId}/statistics/files`)).json.files;
    expect(files).toEqual([{ state: 'writing', openedAt: expect.any(String), statistics: { total: null, levels: {} } }]);
    const aggregation = (await svc.call('GET', `${B()}/aggregation/sources`)).json;
    const source = aggregation.sources.find((s: { sourceId: string }) => s.sourceId === sourceId);
    expect(source.sinks[0].statistics.files).toEqual(files);
  });
});
