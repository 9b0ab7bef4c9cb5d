/**
 * The in-flight marks of the renderers (src/actors/render/inflight.ts): what a slot says is
 * being mapped, read back by the next start, also after the process that wrote it was killed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { forget, InflightSlot, leftMarks, readMark, slotPath } from '../../../src/actors/render/inflight.js';
import type { RenderOwner } from '../../../src/pipeline/batch-render.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-inflight-'));
  dirs.push(dir);
  return dir;
}
const owner: RenderOwner = { branchId: 1, sourceId: 'src', sinkId: 'snk#2', mode: 'stream' };

describe('in-flight slots', () => {
  it('hold the records being mapped until they are left, the newest mark over a longer older one', () => {
    const dir = tempDir();
    const slot = new InflightSlot(slotPath(dir, 'render-shared'));
    expect(readMark(slot.path)).toBeUndefined();
    slot.enter(owner, [100, 101, 102, 103, 104, 105, 106, 107]);
    expect(readMark(slot.path)).toEqual({ owner, offsets: [100, 101, 102, 103, 104, 105, 106, 107] });
    slot.leave();
    expect(readMark(slot.path)).toBeUndefined();
    slot.enter({ ...owner, mode: 'replay' }, [7]);
    expect(readMark(slot.path)).toEqual({ owner: { ...owner, mode: 'replay' }, offsets: [7] });
    slot.close();
    expect(existsSync(slot.path)).toBe(false);
  });

  it('read a torn or foreign file as no mark', () => {
    const dir = tempDir();
    const file = join(dir, 'slot');
    for (const text of ['{"owner":{"branchId":1', 'not json\n', '{"owner":{"branchId":1,"sourceId":"s","sinkId":"k","mode":"later"},"offsets":[1]}\n', '{"owner":{"branchId":1,"sourceId":"s","sinkId":"k","mode":"stream"},"offsets":["1"]}\n', '']) {
      writeFileSync(file, text);
      expect(readMark(file), text).toBeUndefined();
    }
    expect(readMark(join(dir, 'missing'))).toBeUndefined();
  });

  it('are found at the next start with the marks of those not idle, and removed once forgotten', () => {
    const dir = tempDir();
    const busy = new InflightSlot(slotPath(dir, 'render-shared'));
    const idle = new InflightSlot(slotPath(dir, 'render-apart'));
    busy.enter(owner, [5, 6]);
    idle.enter(owner, [9]);
    idle.leave();
    const left = leftMarks(dir);
    expect(left.files.sort()).toEqual([busy.path, idle.path].sort());
    expect(left.marks).toEqual([{ owner, offsets: [5, 6], file: busy.path }]);
    forget(left.files);
    expect(readdirSync(join(dir, 'inflight'))).toEqual([]);
    expect(leftMarks(tempDir())).toEqual({ marks: [], files: [] });
  });

  it('keep a mark through a SIGKILL of the process that wrote it (no fsync: the page cache holds it)', async () => {
    const dir = tempDir();
    const path = slotPath(dir, 'event-loop');
    const module = new URL('../../../src/actors/render/inflight.ts', import.meta.url).href;
    const script = `import(${JSON.stringify(module)}).then(({ InflightSlot }) => {
      const slot = new InflightSlot(${JSON.stringify(path)});
      slot.enter(${JSON.stringify(owner)}, [41, 42]);
      process.stdout.write('marked\\n');
      setInterval(() => {}, 1000);
    });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d) => String(d).includes('marked') && resolve());
      child.on('exit', (code) => reject(new Error(`exited ${code} before marking`)));
    });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal)));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(leftMarks(dir).marks).toEqual([{ owner, offsets: [41, 42], file: path }]);
  });
});
