/**
 * A sink's table id and column names are checked when the request arrives (Stream API create and
 * update): a 400 with the message the table step of the task gave before, and no task, no table,
 * no change. `_timestamp`, the column every table has of its own, is refused by name.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';
import { parseTableId, validateColumns } from '../../src/storage/tables.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const sinkBody = (tableId: string, names: string[], sinkId = 'raw') => ({
  sinkId, name: sinkId, type: 'table',
  table: { type: 'keboola', tableId, mapping: { columns: names.map((name) => ({ type: 'body', name })) } },
});

/** The message the task's table step gives for these (what the request is now refused with). */
function taskMessage(check: () => void): string {
  try {
    check();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the check passed');
}

beforeAll(async () => {
  svc = await TestService.start();
  expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } })).status).toBe('success');
});
afterAll(async () => {
  await svc?.close();
});

describe('sink table names', () => {
  it('refuses a bad table id, bad, colliding or reserved column names at once, with the task\'s message, creating nothing', async () => {
    const cases: Array<[string, string[], string]> = [
      ['in.c-shop.bad table', ['body'], taskMessage(() => parseTableId('in.c-shop.bad table'))],
      ['in.c-shop', ['body'], taskMessage(() => parseTableId('in.c-shop'))],
      ['out.shop.raw', ['body'], taskMessage(() => parseTableId('out.shop.raw'))],
      ['in.c-shop.raw', ['user id'], taskMessage(() => validateColumns(['user id']))],
      ['in.c-shop.raw', ['Id', 'id'], taskMessage(() => validateColumns(['Id', 'id']))],
      ['in.c-shop.raw', ['body', '_timestamp'], 'Column name "_timestamp" is reserved: every table has the system column "_timestamp" (when the row was written).'],
      ['in.c-shop.raw', ['_Timestamp'], 'Column name "_Timestamp" is reserved: every table has the system column "_timestamp" (when the row was written).'],
    ];
    for (const [tableId, names, message] of cases) {
      const res = await svc.call('POST', `${B()}/sources/shop/sinks`, { json: sinkBody(tableId, names) });
      expect(res.status, `${tableId} ${names}`).toBe(400);
      expect(res.json).toEqual({ statusCode: 400, error: 'stream.api.badRequest', message });
    }
    expect((await svc.call('GET', `${B()}/sources/shop/sinks`)).json.sinks).toEqual([]);
    expect((await svc.call('GET', '/v2/storage/buckets')).json).toEqual([]);
  });

  it('refuses an update to a bad table id or a reserved column, leaving the sink as it was', async () => {
    expect((await svc.task('POST', `${B()}/sources/shop/sinks`, { json: sinkBody('in.c-shop.raw', ['body']) })).status).toBe('success');
    const path = `${B()}/sources/shop/sinks/raw`;
    const badTable = await svc.call('PATCH', path, { json: { table: { tableId: 'in.c-shop.' } } });
    expect(badTable.status).toBe(400);
    expect(badTable.json.message).toBe(taskMessage(() => parseTableId('in.c-shop.')));
    // The mapping is checked with the table id it will have: the current one.
    const reserved = await svc.call('PATCH', path, { json: { table: { mapping: { columns: [{ type: 'body', name: '_timestamp' }] } } } });
    expect(reserved.status).toBe(400);
    expect(reserved.json.message).toContain('Column name "_timestamp" is reserved');
    const sink = (await svc.call('GET', path)).json;
    expect(sink).toMatchObject({ version: { number: 1 }, table: { tableId: 'in.c-shop.raw', mapping: { columns: [{ type: 'body', name: 'body' }] } } });
    // A good update still goes through.
    expect((await svc.task('PATCH', path, { json: { table: { tableId: 'in.c-shop.events' } } })).status).toBe('success');
    expect((await svc.call('GET', '/v2/storage/tables/in.c-shop.events')).status).toBe(200);
  });
});
