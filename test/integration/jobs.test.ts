/**
 * The job queue over real HTTP: the seed's flow (variables, a configuration with placeholders,
 * a run with inline values, the log note and the output), job failures, kill, search, events,
 * and recovery after a restart. Components run in their own processes (tsx under vitest).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { TARGETS, targetServers } from '../helpers/targets.js';

let svc: TestService;

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

async function createConfig(componentId: string, fields: Record<string, string>, token: string = MASTER_TOKEN) {
  return svc.call('POST', `/v2/storage/components/${componentId}/configs`, {
    token, body: form(fields), contentType: 'application/x-www-form-urlencoded',
  });
}

async function runJob(body: unknown, token: string = MASTER_TOKEN) {
  return svc.call('POST', '/jobs', { token, json: body });
}

/** Polls GET /jobs/{id} until the job is finished. */
async function waitJob(id: string, timeoutMs = 20_000): Promise<any> {
  return svc.until(`job ${id}`, async () => {
    const res = await svc.call('GET', `/jobs/${id}`);
    expect(res.status).toBe(200);
    return res.json.isFinished ? res.json : undefined;
  }, timeoutMs);
}

async function waitStatus(id: string, status: string): Promise<any> {
  return svc.until(`job ${id} ${status}`, async () => {
    const res = await svc.call('GET', `/jobs/${id}`);
    return res.json.status === status ? res.json : undefined;
  });
}

async function events(query: string): Promise<any[]> {
  const res = await svc.call('GET', `/v2/storage/events?${query}`);
  expect(res.status).toBe(200);
  return res.json;
}

async function preview(tableId: string): Promise<string> {
  const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=100`);
  expect(res.status).toBe(200);
  return res.text;
}

const servers = targetServers();

describe.each(TARGETS)('the job queue on %s', (kind) => {
  beforeAll(async () => {
    svc = await TestService.start({ args: ['--job-workers', '2', '--public-queue-url', 'https://queue.test', ...(await servers.location(kind)).args] });
  }, POSTGRES_START_TIMEOUT_MS);

  afterAll(async () => {
    await svc?.close();
  });

  describe('the seed flow', () => {
    it('runs a configuration with variables and inline multi-line values', async () => {
      // 1. The variable configuration (form-urlencoded, as the seed shows).
      const vars = await createConfig('keboola.variables', {
        name: 'Seed variables',
        configuration: JSON.stringify({ variables: [{ name: 'city', type: 'string' }, { name: 'limit', type: 'int' }] }),
      });
      expect(vars.status).toBe(201);
      expect(vars.json).toMatchObject({ name: 'Seed variables', description: '', version: 1 });
      const variablesId = vars.json.id as string;
      expect(variablesId).toMatch(/^\d+$/);

      // 2. Its default values row.
      const row = await svc.call('POST', `/v2/storage/components/keboola.variables/configs/${variablesId}/rows`, {
        body: form({ name: 'Defaults', configuration: JSON.stringify({ values: [{ name: 'city', value: 'Prague' }, { name: 'limit', value: '10' }] }) }),
        contentType: 'application/x-www-form-urlencoded',
      });
      expect(row.status).toBe(201);

      // 3. The component configuration with placeholders.
      const config = await createConfig('sluice.echo', {
        name: 'Echo with variables',
        configuration: JSON.stringify({
          variables_id: variablesId,
          variables_values_id: row.json.id,
          parameters: { destination: 'in.c-seed.echo', query: 'city = "{{ city }}" LIMIT {{limit}}', note: '{{city}}' },
        }),
      });
      expect(config.status).toBe(201);

      // 4. Run it with inline values: a multi-line value with quotes and braces arrives intact.
      const multiLine = 'Brno\nline "two" {x}\\ end';
      const created = await runJob({
        component: 'sluice.echo',
        config: config.json.id,
        mode: 'run',
        variableValuesData: { values: [{ name: 'city', value: multiLine }, { name: 'limit', value: '5' }] },
      });
      expect(created.status).toBe(201);
      expect(created.json).toMatchObject({ status: 'created', desiredStatus: 'processing', component: 'sluice.echo', config: config.json.id, mode: 'run' });
      expect(created.json.url).toBe(`https://queue.test/jobs/${created.json.id}`);
      expect(created.json.runId).toBe(created.json.id);

      // 5. Poll to success.
      const job = await waitJob(created.json.id);
      expect(job.status).toBe('success');
      expect(job.result.message).toBe('Echoed 3 parameters.');
      expect(job.result.variables).toEqual([{ name: 'city', value: multiLine }, { name: 'limit', value: '5' }]);
      expect(job.result.output.tables).toEqual([{ id: 'in.c-seed.echo', name: 'echo', columns: ['name', 'value'], rows: 3 }]);
      expect(job.startTime).not.toBeNull();
      expect(job.endTime).not.toBeNull();

      // 6. The log note and the output.
      const log = await events(`runId=${job.runId}`);
      const messages = log.map((e) => e.message);
      expect(messages).toContain('Replacing variables using inline values.');
      expect(messages).toContain('Replaced values for variables: city, limit');
      expect(messages).toContain('Parameter "query" written.');
      expect(log.find((e) => e.message === 'Replaced values for variables: city, limit')).toMatchObject({
        component: 'job-runner', type: 'info', runId: job.runId, configurationId: config.json.id,
      });
      const table = await preview('in.c-seed.echo');
      expect(table).toContain(`"city = ""${multiLine.replace(/"/g, '""')}"" LIMIT 5"`);

      // Without inline values the default row is used, and the log says so.
      const byDefault = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id })).json.id);
      expect(byDefault.status).toBe('success');
      expect(byDefault.result.variables).toEqual([{ name: 'city', value: 'Prague' }, { name: 'limit', value: '10' }]);
      expect((await events(`runId=${byDefault.runId}`)).map((e) => e.message))
        .toContain(`Replacing variables using default values with ID: "${row.json.id}"`);

      // With variableValuesId that row is used.
      const byId = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id, variableValuesId: row.json.id })).json.id);
      expect(byId.status).toBe('success');
      expect((await events(`runId=${byId.runId}`)).map((e) => e.message))
        .toContain(`Replacing variables using values with ID: "${row.json.id}".`);
      expect(await preview('in.c-seed.echo')).toContain('"city = ""Prague"" LIMIT 10"');
    });

    it('fails at the create step with a read-only token (403), and nothing is created', async () => {
      const token = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'read only', bucketPermissions: { 'in.c-seed': 'read' } } });
      expect(token.status).toBe(201);
      const before = (await svc.call('GET', '/v2/storage/components/keboola.variables/configs')).json.length;
      const res = await createConfig('keboola.variables', {
        name: 'Not allowed', configuration: JSON.stringify({ variables: [{ name: 'a', type: 'string' }] }),
      }, token.json.token);
      expect(res.status).toBe(403);
      expect(res.json).toMatchObject({ code: 'accessDenied', error: "You don't have access to the resource.", status: 'error' });
      expect((await svc.call('GET', '/v2/storage/components/keboola.variables/configs')).json.length).toBe(before);
      // Nor may it run jobs.
      const job = await runJob({ component: 'sluice.echo', configData: { parameters: {} } }, token.json.token);
      expect(job.status).toBe(403);
      expect(job.json).toMatchObject({ code: 403, status: 'error' });
    });
  });

  describe('job failures', () => {
    it('ends with error and the variables message when a value is missing', async () => {
      const vars = await createConfig('keboola.variables', { name: 'v', configuration: JSON.stringify({ variables: [{ name: 'a', type: 'string' }] }) });
      const config = await createConfig('sluice.echo', {
        name: 'needs a', configuration: JSON.stringify({ variables_id: vars.json.id, parameters: { x: '{{a}} {{b}}' } }),
      });
      const job = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id, variableValuesData: { values: [{ name: 'a', value: '1' }] } })).json.id);
      expect(job.status).toBe('error');
      expect(job.result.message).toBe('Missing values for placeholders: b');
      expect(job.result.error.type).toBe('user');
      expect(job.result.error.exceptionId).toMatch(/^exception-[0-9a-f]{32}$/);
      const log = await events(`runId=${job.runId}`);
      expect(log.map((e) => e.message)).toContain(`Job "${job.id}" ended with user error: "Missing values for placeholders: b"`);
      expect(log.find((e) => e.message.startsWith('Job '))?.type).toBe('error');

      const none = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id })).json.id);
      expect(none.result.message).toBe(`No variable values provided for variables configuration "${vars.json.id}".`);
    });

    it('ends with error when the component fails or crashes', async () => {
      const failed = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { fail: 'Remote API said no.' } } })).json.id);
      expect(failed).toMatchObject({ status: 'error', result: { message: 'Remote API said no.', error: { type: 'user' } } });

      const crashed = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { crash: true } } })).json.id);
      expect(crashed).toMatchObject({ status: 'error', result: { message: 'Internal Server Error occurred.', error: { type: 'application' } } });
      const log = await events(`runId=${crashed.runId}`);
      expect(log.some((e) => /exited unexpectedly \(exit code 3\)/.test(e.message))).toBe(true);
    });

    it('rejects bad job requests with the Queue API messages', async () => {
      const cases: [unknown, number, string][] = [
        [{ component: 'sluice.echo', mode: 'fast', configData: { parameters: {} } }, 400, 'Mode must be one of "run", "forceRun" or "debug".'],
        [{ component: 'sluice.echo', config: '1', variableValuesId: '2', variableValuesData: { values: [{ name: 'a', value: 'b' }] } }, 400,
          'Provide either "variableValuesId" or "variableValuesData", but not both.'],
        [{ component: 'sluice.echo', config: 'missing-config' }, 400, 'Cannot resolve job parameters: Configuration "missing-config" not found'],
        [{ component: 'keboola.variables', config: '1' }, 400, 'The component "keboola.variables" is not runnable.'],
        [{ component: 'sluice.echo', configData: { parameters: {} }, variableValuesData: { values: [{ name: 'a' }] } }, 400,
          'The child config "value" under "job.variableValuesData.values.0" must be configured.'],
        [{ config: '1' }, 400, 'The child config "component" under "job" must be configured.'],
      ];
      for (const [body, status, message] of cases) {
        const res = await runJob(body);
        expect(res.status, JSON.stringify(body)).toBe(status);
        expect(res.json).toMatchObject({ error: message, code: status, status: 'error', context: {} });
        expect(res.json.exceptionId).toMatch(/^exception-/);
      }
      const disabled = await createConfig('sluice.echo', { name: 'off', isDisabled: '1', configuration: '{}' });
      const res = await runJob({ component: 'sluice.echo', config: disabled.json.id });
      expect(res.json.error).toBe(`Configuration "${disabled.json.id}" of component "sluice.echo" is disabled.`);
      expect((await runJob({ component: 'sluice.echo', config: disabled.json.id, mode: 'forceRun' })).status).toBe(201);

      expect((await svc.call('POST', '/jobs', { token: 'wrong', json: {} })).json).toMatchObject({ error: 'Invalid access token', code: 401 });
      expect((await svc.call('GET', '/jobs/999999999')).status).toBe(404);
    });
  });

  describe('rows and state', () => {
    it('runs once per enabled row with the row merged over the configuration, and keeps the state', async () => {
      const config = await createConfig('sluice.echo', {
        name: 'with rows', configuration: JSON.stringify({ parameters: { shared: 'base', countRuns: true } }),
      });
      const rows = `/v2/storage/components/sluice.echo/configs/${config.json.id}/rows`;
      await svc.call('POST', rows, { json: { rowId: 'a', configuration: { parameters: { destination: 'in.c-rows.a', own: 'A' } } } });
      await svc.call('POST', rows, { json: { rowId: 'b', configuration: { parameters: { destination: 'in.c-rows.b', shared: 'B' } } } });
      await svc.call('POST', rows, { json: { rowId: 'off', isDisabled: true, configuration: { parameters: { destination: 'in.c-rows.off' } } } });

      const job = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id })).json.id);
      expect(job.status).toBe('success');
      expect(job.result.output.tables.map((t: any) => t.id)).toEqual(['in.c-rows.a', 'in.c-rows.b']);
      expect(await preview('in.c-rows.a')).toContain('"shared","base"');
      expect(await preview('in.c-rows.a')).toContain('"own","A"');
      expect(await preview('in.c-rows.b')).toContain('"shared","B"');
      expect(job.result.configVersion).toBe('4');

      const again = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id, configRowIds: ['b'] })).json.id);
      expect(again.result.output.tables.map((t: any) => t.id)).toEqual(['in.c-rows.b']);
      const b = (await svc.call('GET', `${rows}/b`)).json;
      expect(b.state).toEqual({ component: { runs: 2 } });
      expect((await svc.call('GET', `${rows}/a`)).json.state).toEqual({ component: { runs: 1 } });
    });

    it('fails the job when the output cannot be loaded, and keeps the old table', async () => {
      const ok = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'in.c-keep.t' } } })).json.id);
      expect(ok.status).toBe('success');
      const bad = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'not a table id' } } })).json.id);
      expect(bad.status).toBe('error');
      expect(bad.result.message).toMatch(/^Cannot load the output table "echo.csv" into "not a table id": Invalid table id/);
      expect((await svc.call('GET', '/v2/storage/tables/in.c-keep.t')).status).toBe(200);
    });
  });

  describe('kill', () => {
    it('terminates a processing job, even one whose component blocks its event loop', async () => {
      const sleeping = await runJob({ component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } });
      const blocking = await runJob({ component: 'sluice.echo', configData: { parameters: { blockSeconds: 60 } } });
      await waitStatus(sleeping.json.id, 'processing');
      await waitStatus(blocking.json.id, 'processing');
      // The API still answers while a component blocks.
      expect((await svc.call('GET', '/jobs/' + blocking.json.id)).status).toBe(200);

      for (const id of [sleeping.json.id, blocking.json.id]) {
        const kill = await svc.call('POST', `/jobs/${id}/kill`);
        expect(kill.status).toBe(202);
        expect(kill.json).toMatchObject({ status: 'terminating', desiredStatus: 'terminating' });
      }
      const started = Date.now();
      expect((await waitJob(sleeping.json.id)).status).toBe('terminated');
      expect((await waitJob(blocking.json.id)).status).toBe('terminated');
      expect(Date.now() - started).toBeLessThan(15_000);
      // Killing a finished job is refused.
      const again = await svc.call('POST', `/jobs/${sleeping.json.id}/kill`);
      expect(again.status).toBe(400);
    });

    it('cancels a job that has not started, and runs at most --job-workers jobs at once', async () => {
      const a = await runJob({ component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } });
      const b = await runJob({ component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } });
      const c = await runJob({ component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } });
      await waitStatus(a.json.id, 'processing');
      await waitStatus(b.json.id, 'processing');
      const queued = await svc.call('GET', `/jobs/${c.json.id}`);
      expect(queued.json.status).toBe('waiting');
      const cancelled = await svc.call('POST', `/jobs/${c.json.id}/kill`);
      expect(cancelled.status).toBe(202);
      expect(cancelled.json).toMatchObject({ status: 'cancelled', desiredStatus: 'terminating', isFinished: true });
      await svc.call('POST', `/jobs/${a.json.id}/kill`);
      await svc.call('POST', `/jobs/${b.json.id}/kill`);
      expect((await waitJob(a.json.id)).status).toBe('terminated');
      expect((await waitJob(b.json.id)).status).toBe('terminated');
    });
  });

  describe('search', () => {
    it('filters, sorts and pages jobs', async () => {
      const config = await createConfig('sluice.echo', { name: 'searched', configuration: JSON.stringify({ parameters: { a: 1 } }) });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await runJob({ component: 'sluice.echo', config: config.json.id, tag: `t${i}` })).json.id);
      for (const id of ids) await waitJob(id);

      const byConfig = await svc.call('GET', `/search/jobs?config=${config.json.id}`);
      expect(byConfig.status).toBe(200);
      expect(byConfig.json.map((j: any) => j.id)).toEqual([...ids].reverse());
      const asc = await svc.call('GET', `/search/jobs?configId[]=${config.json.id}&sortOrder=asc&limit=2&offset=1`);
      expect(asc.json.map((j: any) => j.id)).toEqual(ids.slice(1, 3));
      const byStatus = await svc.call('GET', `/search/jobs?componentId=sluice.echo&status[]=success&status[]=cancelled&limit=500`);
      expect(byStatus.json.every((j: any) => j.status === 'success' || j.status === 'cancelled')).toBe(true);
      expect(byStatus.json.length).toBeGreaterThanOrEqual(3);
      const none = await svc.call('GET', `/search/jobs?id=${ids[0]}&status=error`);
      expect(none.json).toEqual([]);
      const bad = await svc.call('GET', '/search/jobs?sortOrder=sideways');
      expect(bad.status).toBe(400);
    });
  });

  describe('events', () => {
    it('filters by component and configuration and pages', async () => {
      const config = await createConfig('sluice.echo', { name: 'logged', configuration: JSON.stringify({ parameters: { a: 1, b: 2, c: 3 } }) });
      const job = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id })).json.id);
      expect(job.status).toBe('success');
      const mine = await events(`component=sluice.echo&configurationId=${config.json.id}`);
      expect(mine.map((e) => e.message)).toEqual(['Parameter "c" written.', 'Parameter "b" written.', 'Parameter "a" written.']);
      const page = await events(`component=sluice.echo&configurationId=${config.json.id}&limit=1&offset=1&sortOrder=asc`);
      expect(page.map((e) => e.message)).toEqual(['Parameter "b" written.']);
      const branch = await svc.call('GET', `/v2/storage/branch/default/events?runId=${job.runId}`);
      expect(branch.status).toBe(200);
      expect(branch.json.length).toBeGreaterThan(0);
      expect(branch.json[0]).toMatchObject({ runId: job.runId, uuid: expect.any(String), created: expect.stringMatching(/\+0000$/) });
    });
  });

  describe('restart', () => {
    it('ends the jobs that were processing with error, keeps the finished ones, and runs the queued ones after', async () => {
      const running = await runJob({ component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } });
      const done = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { a: 1 } } })).json.id);
      const second = await runJob({ component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } });
      await waitStatus(running.json.id, 'processing');
      await waitStatus(second.json.id, 'processing');
      // Both workers are busy: this one waits, and must survive the restart.
      const queued = await runJob({ component: 'sluice.echo', configData: { parameters: { after: 'restart' } } });
      await waitStatus(queued.json.id, 'waiting');
      await svc.restart();
      for (const id of [running.json.id, second.json.id]) {
        const after = await svc.call('GET', `/jobs/${id}`);
        expect(after.json).toMatchObject({ status: 'error', isFinished: true, result: { error: { type: 'application' } } });
        expect(after.json.result.message).toBe('Job was interrupted: the service stopped while the job was running. Please run it again.');
      }
      expect((await svc.call('GET', `/jobs/${done.id}`)).json.status).toBe('success');
      expect((await waitJob(queued.json.id)).status).toBe('success');
    });
  });

  describe('parent run id', () => {
    it('prefixes the run id with X-KBC-RunId', async () => {
      const res = await svc.call('POST', '/jobs', {
        json: { component: 'sluice.echo', configData: { parameters: {} } }, headers: { 'X-KBC-RunId': '777' },
      });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ parentRunId: '777', runId: `777.${res.json.id}` });
      const job = await waitJob(res.json.id);
      expect((await svc.call('GET', `/search/jobs?parentRunId=777`)).json.map((j: any) => j.id)).toEqual([job.id]);
      expect((await events(`runId=777.${job.id}`)).length).toBeGreaterThan(0);
    });
  });
});
