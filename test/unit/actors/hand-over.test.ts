import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { PartitionHandOver } from '../../../src/actors/hand-over.js';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';

const dirs: string[] = [];
const stores: LmdbMetadataStore[] = [];
function store(): LmdbMetadataStore {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-handover-'));
  dirs.push(dir);
  const s = new LmdbMetadataStore(dir);
  stores.push(s);
  return s;
}
const log = pino({ level: 'silent' });

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('PartitionHandOver (two nodes on one shared store)', () => {
  it('lets the next owner start at once when nobody works on the stream, or it was released', async () => {
    const shared = store();
    const a = new PartitionHandOver(shared, 'a', log);
    const b = new PartitionHandOver(shared, 'b', log);
    await b.awaitRelease('1.1.s');
    a.heartbeat();
    a.working('1.1.s');
    a.released('1.1.s');
    const started = Date.now();
    await b.awaitRelease('1.1.s');
    expect(Date.now() - started).toBeLessThan(100);
  });

  it('waits while a live previous owner still works on the stream, until it releases it', async () => {
    const shared = store();
    const a = new PartitionHandOver(shared, 'a', log, { heartbeatMs: 0 });
    const b = new PartitionHandOver(shared, 'b', log);
    a.heartbeat();
    a.working('1.1.s');
    let done = false;
    const waiting = b.awaitRelease('1.1.s').then(() => (done = true));
    await new Promise((r) => setTimeout(r, 500));
    expect(done).toBe(false);
    a.released('1.1.s');
    await waiting;
    expect(done).toBe(true);
  });

  it('does not wait for a dead previous owner (no heartbeat), and gives up on a live one after the wait', async () => {
    const shared = store();
    const dead = new PartitionHandOver(shared, 'dead', log);
    dead.heartbeat(Date.now() - 60_000);
    dead.working('1.1.s');
    const b = new PartitionHandOver(shared, 'b', log, { deadAfterMs: 10_000 });
    const t0 = Date.now();
    await b.awaitRelease('1.1.s');
    expect(Date.now() - t0).toBeLessThan(100);

    const slow = new PartitionHandOver(shared, 'slow', log);
    slow.heartbeat();
    slow.working('1.1.t');
    const c = new PartitionHandOver(shared, 'c', log, { waitMs: 300 });
    const t1 = Date.now();
    await c.awaitRelease('1.1.t');
    expect(Date.now() - t1).toBeGreaterThanOrEqual(300);
  });

  it('never marks released a stream another node works on', async () => {
    const shared = store();
    const a = new PartitionHandOver(shared, 'a', log);
    const b = new PartitionHandOver(shared, 'b', log, { waitMs: 300 });
    a.heartbeat();
    a.working('1.1.s');
    b.released('1.1.s');
    const t0 = Date.now();
    await b.awaitRelease('1.1.s');
    // Still a's "working" mark: b waited for it.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
  });
});
