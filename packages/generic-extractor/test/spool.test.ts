import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonParser } from '../src/output/json-parser.js';
import { outputFileName, tableCsv } from '../src/output/output.js';
import type { DataFind } from '../src/response/page-data.js';
import { PageSpool } from '../src/output/page-spool.js';
import { ResultCollector } from '../src/output/results.js';
import type { Json, JsonObject } from '../src/php.js';

interface Page {
  type: string;
  data: Json[];
  parent?: JsonObject;
}

const ITEMS: DataFind = { dataField: { path: 'items', delimiter: '.' }, endpoint: 'e', responseFilter: [], responseFilterDelimiter: '.', compatLevel: 3, precision: 17 };
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** The tables as the in-memory parser writes them (every page kept until the end). */
function inMemory(pages: Page[]): { files: [string, string][]; rows: number[] } {
  const p = new JsonParser();
  for (const page of pages) p.process(page.data, page.type, page.parent ?? null);
  const tables = p.getTables();
  return { files: tables.map((t) => [outputFileName('b', t.name), tableCsv(t)]), rows: tables.map((t) => t.rows.length) };
}

/** The tables as the spooled collector writes them; bodies spooled (as JSON) for every other page. */
async function spooled(pages: Page[]): Promise<{ files: [string, string][]; rows: number[]; spoolLeft: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-ge-spool-'));
  dirs.push(dir);
  const spool = new PageSpool(dir);
  const results = new ResultCollector({ warning: () => undefined }, null, 3, undefined, spool);
  pages.forEach((page, i) => {
    const source = i % 2 === 0 ? { raw: Buffer.from(JSON.stringify({ items: page.data })), find: ITEMS } : undefined;
    results.process(page.data, page.type, page.parent ?? null, source);
  });
  const written = await results.write(join(dir, 'out'), 'b', false);
  spool.close();
  const files: [string, string][] = [];
  for (const w of written) files.push([w.file, await readFile(join(dir, 'out', 'tables', w.file), 'utf8')]);
  const spoolLeft = (await readdir(dir)).filter((f) => f.startsWith('.extractor-spool-'));
  return { files, rows: written.map((w) => w.rows), spoolLeft };
}

async function expectSame(pages: Page[]): Promise<void> {
  const expected = inMemory(pages);
  const got = await spooled(pages);
  expect(got.files).toEqual(expected.files);
  expect(got.rows).toEqual(expected.rows);
  expect(got.spoolLeft).toEqual([]);
}

const users = (from: number, n: number, extra: (i: number) => JsonObject = () => ({})): Json[] =>
  Array.from({ length: n }, (_, k) => ({ id: from + k, name: `u${from + k}`, address: { city: 'Prague' }, ...extra(from + k) }));

describe('generic extractor: pages spooled to disk give the tables of the in-memory parse', () => {
  it('pages of one shape: rows made on arrival are copied', async () => {
    await expectSame([1, 2, 3, 4].map((p) => ({ type: 'users', data: users(p * 10, 5) })));
  });

  it('a column that turns up on a later page (the header is the union, earlier rows re-parsed)', async () => {
    await expectSame([
      { type: 'users', data: users(1, 3) },
      { type: 'users', data: users(4, 3, (i) => ({ address: { city: 'Brno', zip: `${i}` }, vip: true })) },
      { type: 'users', data: users(7, 3) },
    ]);
  });

  it('a scalar that a later page has as an array (earlier values move to a child table)', async () => {
    await expectSame([
      { type: 't', data: [{ id: 1, v: 'a' }, { id: 2, v: 'b' }] },
      { type: 't', data: [{ id: 3, v: 'c' }] },
      { type: 't', data: [{ id: 4, v: ['d', 'e'] }] },
      { type: 't', data: [{ id: 5, v: 'f' }] },
    ]);
  });

  it('a null field that a later page has as an object, and as an array', async () => {
    await expectSame([
      { type: 't', data: [{ id: 1, o: null, l: null }] },
      { type: 't', data: [{ id: 2, o: { k: 1 }, l: null }] },
      { type: 't', data: [{ id: 3, o: null, l: [1, 2] }] },
      { type: 't', data: [{ id: 4, o: null, l: null }] },
    ]);
  });

  it('pages with parent columns beside pages without, a parent column clashing with a data column', async () => {
    await expectSame([
      { type: 'detail', data: [{ id: 1 }] },
      { type: 'detail', data: [{ id: 2, parent_id: 'x' }], parent: { parent_id: 7 } },
      { type: 'detail', data: [{ id: 3 }] },
      { type: 'detail', data: [{ id: 4, extra: 1 }], parent: { parent_id: 8, other: 'o' } },
      { type: 'detail', data: [{ id: 5 }] },
    ]);
  });

  it('nested arrays (child tables) on some pages, scalar items, several types and a colliding table name', async () => {
    await expectSame([
      { type: 'users', data: users(1, 2) },
      { type: 'users', data: users(3, 2, (i) => ({ tags: [`t${i}`, `u${i}`], roles: [{ k: i, sub: [i] }] })) },
      { type: 'users_tags', data: ['x', 'y'] },
      { type: 'users', data: users(5, 2) },
      { type: 'users.tags', data: ['z'] },
      { type: 'other', data: [{ a: 1 }, { a: 'two "quoted"', b: 2.5 }] },
    ]);
  });

  it('values written straight to CSV: keys named like properties of Object.prototype, quotes, booleans, floats, empty and missing values (pages without arrays)', async () => {
    const page = (text: string): Page => ({ type: 'odd', data: JSON.parse(text) as Json[] });
    // Every column on the first page: the later pages' rows made on arrival hold.
    await expectSame([
      page('[{"id":1,"constructor":"c","toString":{"x":"a \\"q\\""},"__proto__":"p","f":1.5,"b":false,"n":null,"nested":{"deep":{"k":"v","j":"\\n,"}}}]'),
      page('[{"id":2,"f":0.1,"b":true,"n":null,"toString":null},{"id":3,"__proto__":null,"constructor":"","nested":{"deep":{"k":"v"}}}]'),
      page('[{"id":4},{"id":5,"nested":{"deep":null}},{"id":6,"nested":{"deep":{"k":"w"}}}]'),
    ]);
  });
});
