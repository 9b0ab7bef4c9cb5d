import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { TaskFailure, TaskRunner, type Task } from '../../../src/definition/tasks.js';

const dirs: string[] = [];
function store() {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-tasks-'));
  dirs.push(dir);
  return { dir, store: new LmdbMetadataStore(dir) };
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const logger = pino({ level: 'silent' });

describe('TaskRunner', () => {
  it('stores a processing task, then its success with result, outputs and duration', async () => {
    const { store: s } = store();
    const runner = new TaskRunner(s, logger, 'https://api.example');
    const task = runner.start('api.create.source', '5/my-source', 'k', async () => ({ result: 'Done.', outputs: { sourceId: 'my-source' } }));
    expect(task.taskId).toMatch(/^api\.create\.source\/5\/my-source\/\d{4}-\d\d-\d\dT[\d:.]+Z_[a-z0-9]{5}$/);
    expect(task.url).toBe(`https://api.example/v1/tasks/${task.taskId}`);
    expect(task.status).toBe('processing');
    await runner.drain();
    const done = runner.get(task.taskId)!;
    expect(done).toMatchObject({ status: 'success', isFinished: true, result: 'Done.', outputs: { sourceId: 'my-source' } });
    expect(done.duration).toBeGreaterThanOrEqual(0);
    await s.close();
  });

  it('ends a failed task as error with the message', async () => {
    const { store: s } = store();
    const runner = new TaskRunner(s, logger, 'x');
    const task = runner.start('t', 'p', 'k', async () => {
      throw new TaskFailure('Table schema does not match.');
    });
    await runner.drain();
    expect(runner.get(task.taskId)).toMatchObject({ status: 'error', error: 'Table schema does not match.', isFinished: true });
    await s.close();
  });

  it('runs the tasks of one object one at a time, in order', async () => {
    const { store: s } = store();
    const runner = new TaskRunner(s, logger, 'x');
    const events: string[] = [];
    const slow = (name: string, ms: number) => async () => {
      events.push(`start ${name}`);
      await new Promise((r) => setTimeout(r, ms));
      events.push(`end ${name}`);
      return { result: name, outputs: {} };
    };
    runner.start('t', 'p', 'same', slow('a', 30));
    runner.start('t', 'p', 'same', slow('b', 1));
    expect(runner.isBusy('same')).toBe(true);
    await runner.drain();
    expect(events).toEqual(['start a', 'end a', 'start b', 'end b']);
    expect(runner.isBusy('same')).toBe(false);
    await s.close();
  });

  it('marks tasks left processing by a stopped process as error on the next start', async () => {
    const { dir, store: s } = store();
    const runner = new TaskRunner(s, logger, 'x');
    const task = runner.start('t', 'p', 'k', () => new Promise(() => {}));
    await s.close();
    const reopened = new LmdbMetadataStore(dir);
    const next = new TaskRunner(reopened, logger, 'x');
    expect(next.get(task.taskId)?.status).toBe('processing');
    expect(next.recoverInterrupted()).toBe(1);
    const recovered = next.get(task.taskId)!;
    expect(recovered.status).toBe('error');
    expect(recovered.error).toMatch(/interrupted/);
    expect(recovered.isFinished).toBe(true);
    await reopened.close();
  });

  it('leaves tasks another cluster node runs alone (they reach this store through the shared metadata)', async () => {
    const { store: s } = store();
    const otherNodes: Task = { taskId: 't/p/x', type: 't', url: 'u', status: 'processing', isFinished: false, createdAt: new Date().toISOString() };
    s.transact((tx) => tx.put(`task/${otherNodes.taskId}`, otherNodes));
    const runner = new TaskRunner(s, logger, 'x');
    expect(runner.recoverInterrupted()).toBe(0);
    expect(runner.get(otherNodes.taskId)?.status).toBe('processing');
    await s.close();
  });
});
