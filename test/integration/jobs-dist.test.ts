/**
 * The job queue of the built service (`node dist/main.js serve`, after `npm run build`): the
 * workers start the compiled component-child.js, and a job that was processing when the
 * process was killed (SIGKILL, no cleanup) ends `error` with a reason at the next start.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChildService, sleep } from '../helpers/child-service.js';

const dataDir = mkdtempSync(join(tmpdir(), 'sluice-jobs-dist-'));
let svc: ChildService | undefined;

afterAll(async () => {
  await svc?.dispose();
  rmSync(dataDir, { recursive: true, force: true });
});

async function waitFor(id: string, done: (job: any) => boolean): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await svc!.call('GET', `/jobs/${id}`);
    if (res.status === 200 && done(res.json)) return res.json;
    if (Date.now() > deadline) throw new Error(`job ${id}: ${res.text}`);
    await sleep(50);
  }
}

describe('jobs in the built service', () => {
  it('runs a component from dist/ and recovers a job interrupted by SIGKILL', async () => {
    svc = new ChildService({ dataDir });
    await svc.start();
    const ok = await svc.call('POST', '/jobs', { component: 'sluice.echo', configData: { parameters: { greeting: 'hi' } } });
    expect(ok.status).toBe(201);
    const finished = await waitFor(ok.json.id, (j) => j.isFinished);
    expect(finished.status).toBe('success');
    expect(finished.result.output.tables[0]).toMatchObject({ id: 'in.c-sluice-echo.echo', rows: 1 });

    const long = await svc.call('POST', '/jobs', { component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } });
    await waitFor(long.json.id, (j) => j.status === 'processing');
    await svc.kill('SIGKILL');
    await svc.start();
    const after = await waitFor(long.json.id, () => true);
    expect(after).toMatchObject({ status: 'error', isFinished: true, result: { error: { type: 'application' } } });
    expect(after.result.message).toBe('Job was interrupted: the service stopped while the job was running. Please run it again.');
  });
});
