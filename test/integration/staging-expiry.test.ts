import { afterAll, beforeAll, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { TestService } from '../helpers/service.js';

const logLines: string[] = [];

let svc: TestService;
beforeAll(async () => {
  svc = await TestService.start({
    logger: pino({ level: 'warn' }, { write: (line: string) => void logLines.push(line) }),
    args: ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '200ms', '--staging-retention', '2s'],
  });
});
afterAll(async () => {
  await svc.close();
});

function stagedFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
}

it('expires a file that could not be imported once the staging retention has passed', async () => {
  const B = `/v1/branches/${svc.branchId}`;
  await svc.task('POST', `${B}/sources`, { json: { name: 'Doomed', type: 'http' } });
  await svc.task('POST', `${B}/sources/doomed/sinks`, {
    json: { sinkId: 'd', name: 'd', type: 'table', table: { type: 'keboola', tableId: 'in.c-doomed.d', mapping: { columns: [{ type: 'body', name: 'body' }] } } },
  });
  await svc.task('PATCH', `${B}/sources/doomed/sinks/d/settings`, {
    json: { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.count', value: 1 }] },
  });
  // The table no longer matches the mapping: every import attempt fails.
  await svc.server.services.tables.dropTable('in.c-doomed.d');
  await svc.server.services.tables.ensureTable('in.c-doomed.d', [{ name: 'other' }], { metadata: {} });
  const path = new URL((await svc.call('GET', `${B}/sources/doomed`)).json.http.url).pathname;
  expect((await svc.call('POST', path, { token: null, body: '{"x":1}' })).status).toBe(200);

  const stagingDir = join(svc.dataDir, 'staging', String(svc.branchId), 'doomed', 'd');
  await svc.until('a failed file with staged data', async () => {
    const files = (await svc.call('GET', `${B}/sources/doomed/sinks/d/statistics/files?failedFiles=true`)).json.files;
    return files.length > 0 && stagedFiles(stagingDir).length > 0 ? true : undefined;
  });
  // Past the retention: the file and its staged data are gone, and an error is logged.
  await svc.until('the failed file expired', async () => {
    const files = (await svc.call('GET', `${B}/sources/doomed/sinks/d/statistics/files?failedFiles=true`)).json.files;
    return files.length === 0 ? true : undefined;
  }, 20_000);
  await svc.until('staged data deleted', async () => (stagedFiles(stagingDir).length === 0 ? true : undefined));
  expect((await svc.call('GET', '/v2/storage/tables/in.c-doomed.d')).json.rowsCount).toBe(0);
  const expired = logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'file expired before it could be imported: its staged data is deleted');
  expect(expired).toMatchObject({ level: 50, tableId: 'in.c-doomed.d' });
  expect(expired.reason).toMatch(/File import failed/);
});
