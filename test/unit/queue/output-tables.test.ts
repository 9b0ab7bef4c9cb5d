/**
 * A component's output tables loaded into Storage (queue/output-tables.ts) on both targets: a
 * full load replaces the table, an incremental one appends by column name, adds the columns the
 * table lacks, and refuses a file that leaves one of the table's columns out.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UserError } from '../../../src/components/contract.js';
import { loadOutputTables } from '../../../src/queue/output-tables.js';
import { TableService } from '../../../src/storage/tables.js';
import type { Token } from '../../../src/storage/token-model.js';
import type { Target } from '../../../src/ports/target.js';
import { POSTGRES_START_TIMEOUT_MS } from '../../helpers/postgres.js';
import { TARGETS, targetServers } from '../../helpers/targets.js';

const servers = targetServers();

const MASTER: Token = {
  id: '1', description: 'Master', hash: '', isMasterToken: true, canManageBuckets: true, canManageTokens: true,
  canReadAllFileUploads: true, bucketPermissions: {}, expires: null, created: '2026-01-01T00:00:00Z',
};

describe.each(TARGETS)('output tables on %s', (kind) => {
  let dir: string;
  let target: Target;
  let tables: TableService;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-output-'));
    ({ target } = await servers.open(kind, dir));
    tables = new TableService(target, 1);
  }, POSTGRES_START_TIMEOUT_MS);

  afterEach(async () => {
    await target.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a load of one output file `data.csv` with this content and manifest. */
  const load = (csv: string, incremental: boolean) => {
    const jobDir = join(dir, `job-${Math.random().toString(36).slice(2)}`);
    mkdirSync(join(jobDir, 'out', 'tables'), { recursive: true });
    writeFileSync(join(jobDir, 'out', 'tables', 'data.csv'), csv);
    writeFileSync(join(jobDir, 'out', 'tables', 'data.csv.manifest'), JSON.stringify({ destination: 'in.c-out.data', incremental }));
    return loadOutputTables({ jobDir, tables, componentId: 'sluice.echo', configId: '1', token: MASTER });
  };

  it('appends incrementally by column name, adding new columns and refusing a file that leaves one out', async () => {
    expect(await load('id,name\n1,a\n', false)).toEqual([{ id: 'in.c-out.data', name: 'data', columns: ['id', 'name'], rows: 1 }]);
    // Another column order, and a new column: appended by name, the column added at the end.
    expect((await load('name,note,id\nb,hello,2\n', true))[0].rows).toBe(1);
    expect(await tables.preview('in.c-out.data', 10)).toEqual({ columns: ['id', 'name', 'note'], rows: [['1', 'a', ''], ['2', 'b', 'hello']] });
    // A file without one of the table's columns is the component's fault: nothing written.
    const err = await load('id\n3\n', true).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toContain('Missing columns: name,note.');
    expect((await tables.getTable('in.c-out.data')).rowsCount).toBe(2);
    // A full load replaces the table with the file's columns.
    await load('x\n9\n', false);
    expect(await tables.preview('in.c-out.data', 10)).toEqual({ columns: ['x'], rows: [['9']] });
  });
});
