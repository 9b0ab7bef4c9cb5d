/**
 * A slow template slows its own sink only (issue 21, item 2), against the real process
 * (`node dist/main.js serve`, built by `npm run build`): one sink of a source maps every record
 * until its template's time budget ends it (100 ms and more per record); records flow at a
 * steady rate to that source and to another one; the other sink of the same source and the
 * other source's sink stay under a second behind (sluice_sink_lag_seconds, scraped all along),
 * while the slow sink falls behind. (With `--render-thread off` every sink maps on the event
 * loop, which a busy template holds for a render budget at a time: isolation needs the thread.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChildService, sleep, tail, until } from '../helpers/child-service.js';

const services: ChildService[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const svc of services) await svc.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 30_000);

const N = [{ type: 'path', name: 'n', path: 'n', rawString: true }];
/** Runs until the engine's time budget stops it, for every record. */
const BUSY = [{ type: 'template', name: 'sum', template: { language: 'jsonnet', content: 'std.foldl(function(a, b) a + b, std.range(0, 1e6), 0)' } }];
const RATE_PER_SEC = 20;
const STREAM_MS = 8_000;

/** sluice_sink_lag_seconds by `source/sink`, from one scrape. */
async function lagSeconds(svc: ChildService): Promise<Map<string, number>> {
  const res = await fetch(`${svc.base}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const lags = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^sluice_sink_lag_seconds\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    lags.set(`${labels.source}/${labels.sink}`, Number(m[2]));
  }
  return lags;
}

describe('a slow template', () => {
  it('slows its own sink only: the other sink of its source and another source stay under a second behind', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-isolation-'));
    dirs.push(dataDir);
    const svc = new ChildService({ dataDir });
    services.push(svc);
    await svc.start();
    const busy = await svc.createSource('busy');
    const calm = await svc.createSource('calm');
    await svc.createSink('busy', 'slow', 'in.c-isolation.slow', [...N, ...BUSY]);
    await svc.createSink('busy', 'quick', 'in.c-isolation.quick', N);
    await svc.createSink('calm', 'other', 'in.c-isolation.other', N);

    // A steady stream to both sources; the lags scraped every 100 ms meanwhile.
    const worst = new Map<string, number>();
    let sent = 0;
    let streaming = true;
    const scraping = (async () => {
      while (streaming) {
        for (const [sink, lag] of await lagSeconds(svc)) worst.set(sink, Math.max(worst.get(sink) ?? 0, lag));
        await sleep(100);
      }
    })();
    const started = Date.now();
    while (Date.now() - started < STREAM_MS) {
      const body = JSON.stringify({ n: `e${sent}` });
      const [a, b] = await Promise.all([svc.send(busy, body), svc.send(calm, body)]);
      expect(a.answered && a.status, JSON.stringify(a)).toBe(200);
      expect(b.answered && b.status, JSON.stringify(b)).toBe(200);
      sent++;
      await sleep(Math.max(0, started + (sent * 1000) / RATE_PER_SEC - Date.now()));
    }
    streaming = false;
    await scraping;

    const summary = `${sent} records to each source; worst lag (s) ${JSON.stringify(Object.fromEntries(worst))}`;
    console.log(`isolation: ${summary}`);
    expect(worst.get('busy/quick'), summary).toBeLessThan(1);
    expect(worst.get('calm/other'), summary).toBeLessThan(1);
    // The slow sink did fall behind: the test measured what it means to.
    expect(worst.get('busy/slow'), summary).toBeGreaterThan(1);
    // Every record reached the fast sinks.
    for (const [source, sink] of [['busy', 'quick'], ['calm', 'other']]) {
      await until(`${source}/${sink} has every record`, async () => ((await svc.sinkStatistics(source, sink)).total?.recordsCount === sent ? true : undefined), 10_000);
    }
    expect(svc.output(), tail(svc.output())).toMatch(/sink maps slowly/);
    expect(await svc.stop(), tail(svc.output())).toEqual({ code: 0, signal: null });
  }, 90_000);
});
