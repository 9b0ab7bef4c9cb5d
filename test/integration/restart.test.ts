import { afterAll, beforeAll, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await TestService.start();
});
afterAll(async () => {
  await svc.close();
});

it('keeps definitions, tokens and tables across a restart, and fails tasks a stop interrupted', async () => {
  const B = `/v1/branches/${svc.branchId}`;
  await svc.task('POST', `${B}/sources`, { json: { name: 'Durable', type: 'http' } });
  await svc.task('POST', `${B}/sources/durable/sinks`, {
    json: { name: 'Rows', type: 'table', table: { type: 'keboola', tableId: 'in.c-durable.rows', mapping: { columns: [{ type: 'body', name: 'body' }] } } },
  });
  const url = (await svc.call('GET', `${B}/sources/durable`)).json.http.url;

  // What a crash leaves behind: a task stored as processing (and marked as run by this node) that no process will finish.
  const taskId = `api.update.source/${svc.branchId}/durable/2026-01-01T00:00:00.000Z_crash`;
  svc.server.services.metadata.transact((tx) => {
    tx.put(`task/${taskId}`, { taskId, type: 'api.update.source', url: `https://api.test/v1/tasks/${taskId}`, status: 'processing', isFinished: false, createdAt: '2026-01-01T00:00:00.000Z' });
    tx.put(`node/runningTask/${taskId}`, true);
  });

  await svc.restart();

  expect((await svc.call('GET', `${B}/sources/durable`)).json.http.url).toBe(url);
  expect((await svc.call('GET', `${B}/sources/durable/sinks/rows`)).status).toBe(200);
  expect((await svc.call('GET', '/v2/storage/tables/in.c-durable.rows')).json.columns).toEqual(['body']);
  const tokens = (await svc.call('GET', '/v2/storage/tokens')).json as any[];
  expect(tokens.some((t) => t.description === '[_internal] Stream Sink durable/rows')).toBe(true);

  const task = (await svc.call('GET', `/v1/tasks/${taskId}`)).json;
  expect(task).toMatchObject({ status: 'error', isFinished: true });
  expect(task.error).toMatch(/interrupted/);
});
