/**
 * Back-pressure from the sinks to ingestion (issue 22, item 2), against the real process
 * (`node dist/main.js serve`): with `--max-sink-backlog 20`, a source whose sink maps slowly
 * (a template of some milliseconds a record, `--render-budget 0` so that it stays with its
 * source) is refused on every ingestion path once its sink is more than 20 records behind:
 * 429 with Retry-After in each path's envelope, nothing appended. Once the sink is within 10
 * records the source takes records again, and the sink has every accepted record once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChildService, tail, until } from '../helpers/child-service.js';

const services: ChildService[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const svc of services) await svc.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 30_000);

/** A few milliseconds a record, far below the engine's time budget. */
const SLOW = [
  { type: 'path', name: 'n', path: 'n', defaultValue: '', rawString: true },
  { type: 'template', name: 'sum', template: { language: 'jsonnet', content: 'std.foldl(function(a, b) a + b, std.range(0, 3000), 0)' } },
];

const otlpLogs = (n: number) => JSON.stringify({
  resourceLogs: [{ scopeLogs: [{ logRecords: Array.from({ length: n }, (_, i) => ({ body: { stringValue: `line ${i}` } })) }] }],
});

describe('back-pressure from slow sinks', () => {
  it('refuses a source\'s records with 429 and Retry-After on every path while its sinks are too far behind, then takes them again', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-backlog-'));
    dirs.push(dataDir);
    const svc = new ChildService({ dataDir, env: { SLUICE_MAX_SINK_BACKLOG: '20', SLUICE_RENDER_BUDGET: '0s' } });
    services.push(svc);
    await svc.start();
    const http = await svc.createSource('web');
    await svc.createSink('web', 'slow', 'in.c-backlog.web', SLOW);
    await svc.task('POST', '/v1/branches/default/sources', { sourceId: 'otel', name: 'otel', type: 'otlp' });
    const otel = await svc.call('GET', '/v1/branches/default/sources/otel');
    const otlpUrl = `${new URL(otel.json.otlp.url as string).pathname}/v1/logs`;
    await svc.createSink('otel', 'slow', 'in.c-backlog.otel', SLOW);

    // One batch of 400 records each: accepted (the sinks were not behind), then they are.
    const batch = Array.from({ length: 400 }, (_, i) => JSON.stringify({ n: i })).join('\n');
    const first = await svc.send(`${http}/batch`, batch);
    expect(first.answered && first.status, JSON.stringify(first)).toBe(200);
    const firstOtlp = await fetch(svc.base + otlpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: otlpLogs(400) });
    expect(firstOtlp.status, await firstOtlp.text()).toBe(200);

    // Every path refuses now (as soon as the router has seen the records durable), in its own
    // envelope, with Retry-After.
    const single = await until('the HTTP source refuses', async () => {
      const r = await svc.send(http, JSON.stringify({ n: 'refused' }));
      if (r.answered && r.status === 200) throw new Error('a record was taken while the sink was behind');
      return r.answered && r.status === 429 ? r : undefined;
    }, 5_000, 10);
    expect(single.retryAfter).toBe('1');
    expect(single.json).toMatchObject({ statusCode: 429, error: 'stream.in.tooManyRequests', sources: [{ sourceId: 'web', sinks: [{ sinkId: 'slow', statusCode: 429 }] }] });
    const verbose = await svc.send(`${http}?verbose=true`, JSON.stringify({ n: 'refused' }));
    expect(verbose.answered && verbose.status, JSON.stringify(verbose)).toBe(429);
    const refusedBatch = await svc.send(`${http}/batch`, '{"n":"refused"}\n{"n":"refused"}');
    expect(refusedBatch.answered && refusedBatch.status, JSON.stringify(refusedBatch)).toBe(429);
    if (!refusedBatch.answered) throw new Error('no answer');
    expect(refusedBatch.retryAfter).toBe('1');
    expect(refusedBatch.json?.error).toBe('stream.in.tooManyRequests');
    const refusedOtlp = await fetch(svc.base + otlpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: otlpLogs(3) });
    expect(refusedOtlp.status).toBe(429);
    expect(refusedOtlp.headers.get('retry-after')).toBe('1');
    expect(await refusedOtlp.json()).toMatchObject({ code: 8, statusCode: 429, error: 'stream.in.tooManyRequests' });

    // Once the sinks have caught up, records are taken again.
    const taken = await until('the HTTP source takes records again', async () => {
      const r = await svc.send(http, JSON.stringify({ n: 'later' }));
      return r.answered && r.status === 200 ? r : undefined;
    }, 60_000, 200);
    expect(taken.answered).toBe(true);
    const otlpAgain = await until('the OTLP source takes records again', async () => {
      const r = await fetch(svc.base + otlpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: otlpLogs(1) });
      await r.arrayBuffer();
      return r.status === 200 ? r : undefined;
    }, 60_000, 200);
    expect(otlpAgain.status).toBe(200);

    // Every accepted record once, none of the refused ones.
    for (const [source, expected] of [['web', 401], ['otel', 401]] as const) {
      await until(`${source} has its ${expected} records`, async () => {
        const n = (await svc.sinkStatistics(source, 'slow')).total?.recordsCount;
        return n === expected ? n : undefined;
      }, 60_000, 200);
    }
    expect(svc.output(), tail(svc.output())).toMatch(/too far behind its records/);
    expect(svc.output(), tail(svc.output())).toMatch(/have caught up/);
    expect(await svc.stop(), tail(svc.output())).toEqual({ code: 0, signal: null });
  }, 150_000);
});
