import { describe, expect, it } from 'vitest';
import { BlockIds } from '../../../src/adapters/metadata/block-ids.js';
import type { MetadataTx } from '../../../src/ports/metadata-store.js';

const tx = {} as MetadataTx;

describe('BlockIds (cluster ids)', () => {
  it('gives two nodes disjoint ids from the blocks they reserved, and reserves the next block in time', async () => {
    let offset = 0;
    const reserve = async () => offset++; // the metadata log's offsets: unique whoever asks
    const a = await BlockIds.start(reserve);
    const b = await BlockIds.start(reserve);
    // Taken in bursts: between them the next block arrives (reserved once fewer than 250 are left).
    const fromA: string[] = [];
    const fromB: string[] = [];
    for (let burst = 0; burst < 5; burst++) {
      for (let i = 0; i < 500; i++) fromA.push(a.next(tx, 'storage'));
      for (let i = 0; i < 200; i++) fromB.push(b.next(tx, 'token'));
      await new Promise((r) => setImmediate(r));
    }
    const all = new Set([...fromA, ...fromB]);
    expect(all.size).toBe(3500);
    // Ids grow within a node.
    expect(fromA.map(Number)).toEqual([...fromA.map(Number)].sort((x, y) => x - y));
  });

  it('refuses with a clear message when its ids ran out before a new block came', async () => {
    let release!: () => void;
    let calls = 0;
    const reserve = () => (calls++ === 0 ? Promise.resolve(0) : new Promise<number>((r) => (release = () => r(5))));
    const ids = await BlockIds.start(reserve);
    for (let i = 0; i < 1000; i++) ids.next(tx, 'storage');
    expect(() => ids.next(tx, 'storage')).toThrow(/No ids are reserved at the moment/);
    release();
    await new Promise((r) => setTimeout(r, 10));
    expect(Number(ids.next(tx, 'storage'))).toBe(1_000_000 + 5 * 1000 + 1);
  });
});
