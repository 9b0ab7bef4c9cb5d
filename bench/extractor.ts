/**
 * `npm run bench -- extractor [--pages N] [--items N] [--rounds N]`: pages/s and items/s of the
 * generic extractor paging (offset method) through a local API of 1,000 pages × 100 items, from
 * the first request to the written CSV tables. The baseline, in the same run against the same
 * server, is a bare undici loop fetching the same pages and parsing their JSON (no pagination
 * logic, no flattening, no output). Medians of a few rounds.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { runExtraction } from '@sluice/generic-extractor';
import { median, round2 } from './util.js';

function page(offset: number, limit: number, total: number): string {
  const items = [];
  for (let i = offset; i < Math.min(offset + limit, total); i++) {
    items.push({ id: i, name: `user ${i}`, email: `user${i}@example.com`, active: i % 2 === 0, score: i % 97, address: { city: 'Prague', zip: `1${i % 1000}` } });
  }
  return JSON.stringify({ items, total });
}

/** Serves `/users?limit=L&offset=O` with pre-rendered pages. */
async function startApi(pages: number, perPage: number): Promise<{ url: string; close: () => Promise<void> }> {
  const total = pages * perPage;
  const rendered = new Map<number, Buffer>();
  for (let p = 0; p <= pages; p++) rendered.set(p * perPage, Buffer.from(page(p * perPage, perPage, total)));
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const body = rendered.get(offset) ?? Buffer.from(page(offset, perPage, total));
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function extractorRound(baseUrl: string, perPage: number): Promise<{ seconds: number; pages: number; items: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-ge-'));
  try {
    const config = {
      parameters: {
        api: { baseUrl, pagination: { method: 'offset', limit: perPage } },
        config: { outputBucket: 'bench', jobs: [{ endpoint: 'users', dataField: 'items' }] },
      },
    };
    await writeFile(join(dir, 'config.json'), JSON.stringify(config));
    const started = performance.now();
    const result = await runExtraction({ dataDir: dir, log: () => undefined });
    return { seconds: (performance.now() - started) / 1000, pages: result.pages, items: result.items };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function bareRound(baseUrl: string, pages: number, perPage: number): Promise<{ seconds: number; pages: number }> {
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: 16 });
  const started = performance.now();
  let n = 0;
  // The extractor requests one page more than there are (the empty page that stops it).
  for (let p = 0; p <= pages; p++) {
    const res = await request(`${baseUrl}users?limit=${perPage}&offset=${p * perPage}`, { dispatcher: agent });
    JSON.parse(await res.body.text());
    n++;
  }
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  return { seconds, pages: n };
}

export async function extractorBench(args: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args, options: { pages: { type: 'string' }, items: { type: 'string' }, rounds: { type: 'string' } } });
  const pages = Number(values.pages ?? 1000);
  const perPage = Number(values.items ?? 100);
  const rounds = Number(values.rounds ?? 5);
  const api = await startApi(pages, perPage);
  try {
    await extractorRound(api.url, perPage); // warm-up
    await bareRound(api.url, pages, perPage);
    const ext: { pagesPerSec: number; itemsPerSec: number }[] = [];
    const bare: number[] = [];
    // Each round's extractor beside the bare loop that follows it: the machine's load changes less within a round.
    const ratios: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const e = await extractorRound(api.url, perPage);
      ext.push({ pagesPerSec: e.pages / e.seconds, itemsPerSec: e.items / e.seconds });
      const b = await bareRound(api.url, pages, perPage);
      bare.push(b.pages / b.seconds);
      ratios.push(e.pages / e.seconds / (b.pages / b.seconds));
      process.stdout.write(
        `round ${r + 1}: extractor ${round2(e.pages / e.seconds)} pages/s, ${round2(e.items / e.seconds)} items/s (${e.pages} pages, ${e.items} items, ${round2(e.seconds)} s); bare loop ${round2(b.pages / b.seconds)} pages/s; ratio ${round2(ratios[r])}\n`,
      );
    }
    const pagesPerSec = median(ext.map((x) => x.pagesPerSec));
    const bareLoopPagesPerSec = median(bare);
    return {
      pages,
      itemsPerPage: perPage,
      rounds,
      pagesPerSec: round2(pagesPerSec),
      itemsPerSec: round2(median(ext.map((x) => x.itemsPerSec))),
      bareLoopPagesPerSec: round2(bareLoopPagesPerSec),
      ratioToBareLoop: round2(pagesPerSec / bareLoopPagesPerSec),
      medianRoundRatio: round2(median(ratios)),
    };
  } finally {
    await api.close();
  }
}
