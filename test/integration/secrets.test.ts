/**
 * Encrypted `#` values over real HTTP, LMDB and component processes: every answer of the
 * configuration and queue APIs holds only the ciphertext, the metadata file holds no plain
 * value, a job's component gets the plain value (the generic extractor sends a `#token` to a
 * local API) while echo writes the mask, a value of another key fails its job clearly, a node
 * with another key refuses to start, and `sluice secrets rotate-key` re-encrypts everything,
 * queued jobs included.
 */
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LmdbMetadataStore } from '../../src/adapters/metadata/lmdb-store.js';
import { encryptedKeyId, generateEncryptionKey, keyIdOf, parseEncryptionKey, ValueCipher } from '../../src/model/value-cipher.js';
import { TestService } from '../helpers/service.js';

const ROOT = resolve(__dirname, '../..');
const CIPHERTEXT = /^KBC::ProjectSecure::[A-Za-z0-9+/]+={0,2}$/;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

let svc: TestService;
let api: Server;
let apiBase: string;
const requests: { url: string; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  api = createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify([{ id: 1, name: 'one' }, { id: 2, name: 'two' }]));
  });
  await new Promise<void>((done) => api.listen(0, '127.0.0.1', done));
  apiBase = `http://127.0.0.1:${(api.address() as AddressInfo).port}/`;
  svc = await TestService.start({ args: ['--job-workers', '2'] });
});

afterAll(async () => {
  await svc?.close();
  await new Promise((done) => api?.close(done));
});

/** Every answer's text, for "the plain value is nowhere in it". */
async function texts(paths: string[], service = svc): Promise<string> {
  const answers = await Promise.all(paths.map(async (path) => {
    const res = await service.call('GET', path);
    expect(res.status, path).toBe(200);
    return res.text;
  }));
  return answers.join('\n');
}

/** The metadata file's bytes (LMDB keeps strings as they are: a plain value would be found). */
function metadataFile(service = svc): Buffer {
  return readFileSync(join(service.dataDir, 'metadata', 'data.mdb'));
}

async function waitJob(id: string, service = svc, timeoutMs = 30_000): Promise<any> {
  return service.until(`job ${id}`, async () => {
    const res = await service.call('GET', `/jobs/${id}`);
    return res.json.isFinished ? res.json : undefined;
  }, timeoutMs);
}

async function jobLog(runId: string, service = svc): Promise<string> {
  return (await service.call('GET', `/v2/storage/events?runId=${runId}&limit=1000`)).text;
}

/** `sluice <args>` from the sources. */
function sluice(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('configurations, rows, variables and state', () => {
  it('answer only the ciphertext of # values, in every answer, and the metadata file holds no plain value', async () => {
    const plain = { password: 'pw-7c1d-plain', token: 'tk-93fe-plain', row: 'row-5b2a-plain', state: 'st-1e8c-plain', rowState: 'rs-44d0-plain', variable: 'var-a61f-plain' };
    const created = await svc.call('POST', '/v2/storage/components/sluice.echo/configs', {
      body: form({
        name: 'Holder of marker-f00d',
        configuration: JSON.stringify({ parameters: { user: 'alice', '#password': plain.password, nested: { list: [{ '#token': plain.token, kept: 'visible' }] } } }),
        state: JSON.stringify({ component: { '#cursor': plain.state } }),
      }),
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    const password = created.json.configuration.parameters['#password'];
    expect(password).toMatch(CIPHERTEXT);
    expect(created.json.configuration.parameters.nested.list[0]).toEqual({ '#token': expect.stringMatching(CIPHERTEXT), kept: 'visible' });
    expect(created.json.configuration.parameters.user).toBe('alice');
    expect(created.json.state.component['#cursor']).toMatch(CIPHERTEXT);

    // Sending the configuration back as answered, or with the same plain value, changes nothing (no new version).
    const same = await svc.call('PUT', `/v2/storage/components/sluice.echo/configs/${id}`, {
      json: { configuration: { parameters: { user: 'alice', '#password': plain.password, nested: { list: [{ '#token': created.json.configuration.parameters.nested.list[0]['#token'], kept: 'visible' }] } } } },
    });
    expect(same.status).toBe(200);
    expect(same.json.version).toBe(1);
    expect(same.json.configuration.parameters['#password']).toBe(password);

    const row = await svc.call('POST', `/v2/storage/components/sluice.echo/configs/${id}/rows`, {
      json: { name: 'r', configuration: { parameters: { '#rowSecret': plain.row } } },
    });
    expect(row.status).toBe(201);
    expect(row.json.configuration.parameters['#rowSecret']).toMatch(CIPHERTEXT);
    const rowState = await svc.call('PUT', `/v2/storage/components/sluice.echo/configs/${id}/rows/${row.json.id}/state`, {
      json: { state: { component: { '#rowCursor': plain.rowState } } },
    });
    expect(rowState.status).toBe(200);
    expect(rowState.json.state.component['#rowCursor']).toMatch(CIPHERTEXT);

    const vars = await svc.call('POST', '/v2/storage/components/keboola.variables/configs', {
      json: { name: 'vars', configuration: { variables: [{ name: 'x', type: 'string' }], '#note': plain.variable } },
    });
    expect(vars.status).toBe(201);
    const values = await svc.call('POST', `/v2/storage/components/keboola.variables/configs/${vars.json.id}/rows`, {
      json: { configuration: { values: [{ name: 'x', value: '1' }], meta: [{ '#by': plain.variable }] } },
    });
    expect(values.status).toBe(201);
    expect(values.json.configuration.meta[0]['#by']).toMatch(CIPHERTEXT);

    const base = `/v2/storage/components/sluice.echo/configs/${id}`;
    const all = await texts([
      base, '/v2/storage/components/sluice.echo/configs', '/v2/storage/components?include=configuration,rows,state',
      `${base}/versions?include=configuration`, `${base}/versions/1`, `${base}/versions/2`, `${base}/rows`, `${base}/rows/${row.json.id}`,
      `/v2/storage/branch/default/components/keboola.variables/configs/${vars.json.id}`, `/v2/storage/components/keboola.variables/configs/${vars.json.id}/rows`,
    ]);
    for (const value of Object.values(plain)) expect(all).not.toContain(value);
    expect(all.match(/KBC::ProjectSecure::/g)!.length).toBeGreaterThanOrEqual(12);

    const file = metadataFile();
    expect(file.includes('marker-f00d'), 'the test reads the file the configurations are in').toBe(true);
    for (const value of Object.values(plain)) expect(file.includes(value), value).toBe(false);
  });

  it('refuses an encrypted value this project cannot decrypt with 400, and changes nothing', async () => {
    const foreign = new ValueCipher(parseEncryptionKey(generateEncryptionKey())).encrypt('x');
    const res = await svc.call('POST', '/v2/storage/components/sluice.echo/configs', {
      json: { name: 'foreign', configurationId: 'foreign-secret', configuration: { parameters: { '#password': foreign } } },
    });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ status: 'error', code: 'encryption.invalidValue' });
    expect(res.json.error).toMatch(/^The value of "configuration.parameters.#password" starts with "KBC::ProjectSecure::" but is not a valid encrypted value of this project: it was encrypted with another key/);
    expect((await svc.call('GET', '/v2/storage/components/sluice.echo/configs/foreign-secret')).status).toBe(404);
    const job = await svc.call('POST', '/jobs', { json: { component: 'sluice.echo', configData: { parameters: { '#password': foreign } } } });
    expect(job.status).toBe(400);
    expect(job.json).toMatchObject({ code: 400, status: 'error', context: { errorCode: 'encryption.invalidValue' } });
    expect(job.json.error).toContain('"configData.parameters.#password"');
  });
});

describe('jobs', () => {
  it("inline configData answers only the ciphertext (job, search, events) and echo's table shows the mask", async () => {
    const plain = 'inline-9d3e-plain';
    const created = await svc.call('POST', '/jobs', {
      json: { component: 'sluice.echo', configData: { parameters: { destination: 'in.c-secrets.inline', user: 'bob', '#password': plain, list: [{ '#key': plain }] } } },
    });
    expect(created.status).toBe(201);
    expect(created.json.configData.parameters['#password']).toMatch(CIPHERTEXT);
    expect(created.text).not.toContain(plain);
    const job = await waitJob(created.json.id);
    expect(job.status, JSON.stringify(job.result)).toBe('success');
    const all = await texts([`/jobs/${job.id}`, '/search/jobs?component=sluice.echo', '/jobs?limit=500', `/v2/storage/events?runId=${job.runId}`]);
    expect(all).not.toContain(plain);
    expect(all).toContain(created.json.configData.parameters['#password']);

    const table = await svc.call('GET', '/v2/storage/tables/in.c-secrets.inline/data-preview?limit=100');
    expect(table.status).toBe(200);
    expect(table.text).not.toContain(plain);
    expect(table.text).not.toContain('KBC::ProjectSecure::');
    expect(table.text).toContain('"#password","*****"');
    expect(table.text).toContain('"list.0.#key","*****"');
    expect(table.text).toContain('"user","bob"');
    expect(metadataFile().includes(plain)).toBe(false);
  });

  it('the component gets the plain value after variables are rendered: the extractor sends the #token to a local API', async () => {
    const token = 'tok-0b7a-plain';
    const vars = await svc.call('POST', '/v2/storage/components/keboola.variables/configs', {
      json: { name: 'endpoint', configuration: { variables: [{ name: 'endpoint', type: 'string' }] } },
    });
    const config = await svc.call('POST', '/v2/storage/components/keboola.ex-generic-v2/configs', {
      json: {
        name: 'API with a token',
        configuration: {
          variables_id: vars.json.id,
          parameters: {
            api: { baseUrl: apiBase, http: { headers: { 'X-Api-Token': { attr: '#token' } } } },
            config: { '#token': token, outputBucket: 'secrets-api', jobs: [{ endpoint: '{{ endpoint }}' }] },
          },
        },
      },
    });
    expect(config.status).toBe(201);
    expect(config.json.configuration.parameters.config['#token']).toMatch(CIPHERTEXT);
    requests.length = 0;
    const created = await svc.call('POST', '/jobs', {
      json: { component: 'keboola.ex-generic-v2', config: config.json.id, variableValuesData: { values: [{ name: 'endpoint', value: 'users' }] } },
    });
    expect(created.status).toBe(201);
    const job = await waitJob(created.json.id);
    expect(job.status, JSON.stringify(job.result)).toBe('success');
    expect(requests.map((r) => [r.url, r.headers['x-api-token']])).toEqual([['/users', token]]);
    const log = await jobLog(job.runId);
    expect(log).toContain('Replaced values for variables: endpoint');
    expect(log).not.toContain(token);
    expect(metadataFile().includes(token)).toBe(false);
  });

  it('masks the plain values in what the component says (its error message, and so the job log)', async () => {
    const plain = 'said-8e1b-plain';
    const created = await svc.call('POST', '/jobs', {
      json: { component: 'sluice.echo', configData: { parameters: { '#password': plain, fail: `login refused for password ${plain}` } } },
    });
    const job = await waitJob(created.json.id);
    expect(job.status).toBe('error');
    expect(job.result.message).toBe('login refused for password *****');
    const log = await jobLog(job.runId);
    expect(log).not.toContain(plain);
    expect(log).toContain('login refused for password *****');
  });

  it('a value encrypted with a key this node does not have fails the job with a clear message, never the plain value', async () => {
    const created = await svc.call('POST', '/v2/storage/components/sluice.echo/configs', {
      json: { name: 'restored from elsewhere', configuration: { parameters: { '#password': 'mine' } } },
    });
    expect(created.status).toBe(201);
    // As a backup restored from a project with another key would hold it.
    const otherKey = parseEncryptionKey(generateEncryptionKey());
    await svc.stop();
    const store = new LmdbMetadataStore(join(svc.dataDir, 'metadata'));
    const key = `storage/configs/sluice.echo/${created.json.id}`;
    const stored = store.get<any>(key);
    store.transact((tx) => tx.put(key, { ...stored, configuration: { parameters: { '#password': new ValueCipher(otherKey).encrypt('theirs-77') } } }));
    await store.close();
    await svc.start();

    const job = await waitJob((await svc.call('POST', '/jobs', { json: { component: 'sluice.echo', config: created.json.id } })).json.id);
    expect(job.status).toBe('error');
    expect(job.result.error.type).toBe('user');
    expect(job.result.message).toBe(`The value of "configuration.parameters.#password" cannot be decrypted: it was encrypted with another key (key id ${keyIdOf(otherKey)}; this node's key id is ${encryptedKeyId(created.json.configuration.parameters['#password'])}). Set the key it was encrypted with (SLUICE_ENCRYPTION_KEY), or save the value again.`);
    expect(await jobLog(job.runId)).toContain('cannot be decrypted');
  });
});

describe('values saved before encryption', () => {
  it('are encrypted at the first start with a key, configurations, versions and jobs alike', async () => {
    const created = await svc.call('POST', '/v2/storage/components/sluice.echo/configs', { json: { name: 'from an earlier version', configuration: { parameters: { n: 1 } } } });
    const job = await waitJob((await svc.call('POST', '/jobs', { json: { component: 'sluice.echo', configData: { parameters: { n: 2 } } } })).json.id);
    await svc.stop();
    // As an earlier version stored them: the # values as sent, and no mark of the pass.
    const store = new LmdbMetadataStore(join(svc.dataDir, 'metadata'));
    const configKey = `storage/configs/sluice.echo/${created.json.id}`;
    const versionKey = `storage/configVersions/sluice.echo/${created.json.id}/${'1'.padStart(10, '0')}`;
    const jobKey = `queue/job/${job.id.padStart(15, '0')}`;
    const legacy = { parameters: { n: 1, '#password': 'legacy-4f2c-plain' } };
    store.transact((tx) => {
      tx.put(configKey, { ...tx.get<any>(configKey), configuration: legacy });
      tx.put(versionKey, { ...tx.get<any>(versionKey), configuration: legacy });
      tx.put(jobKey, { ...tx.get<any>(jobKey), configData: { parameters: { '#old': 'legacy-job-plain' } } });
      tx.delete('storage/plainSecretsSealed');
    });
    await store.close();
    await svc.start();

    const all = await texts([`/v2/storage/components/sluice.echo/configs/${created.json.id}`, `/v2/storage/components/sluice.echo/configs/${created.json.id}/versions/1`, `/jobs/${job.id}`]);
    expect(all).not.toContain('legacy-4f2c-plain');
    expect(all).not.toContain('legacy-job-plain');
    expect(all.match(/KBC::ProjectSecure::/g)).toHaveLength(3);
    const run = await waitJob((await svc.call('POST', '/jobs', { json: { component: 'sluice.echo', config: created.json.id } })).json.id);
    expect(run.status, JSON.stringify(run.result)).toBe('success');
  });
});

describe('the key', () => {
  it('is generated into the data directory (0600); a node with another key refuses to start; rotate-key re-encrypts everything, queued jobs included', async () => {
    const node = await TestService.start({ args: ['--job-workers', '1'] });
    try {
      const keyFile = join(node.dataDir, 'encryption-key');
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      const oldKey = parseEncryptionKey(readFileSync(keyFile, 'utf8'));
      const secret = 'rotate-31ab-plain';
      const config = await node.call('POST', '/v2/storage/components/sluice.echo/configs', {
        json: { name: 'to rotate', configuration: { parameters: { destination: 'in.c-rotate.echo', '#password': secret } } },
      });
      const before = config.json.configuration.parameters['#password'];
      expect(encryptedKeyId(before)).toBe(keyIdOf(oldKey));

      // One worker, busy: the extractor job waits in the queue across the rotation.
      const blocker = await node.call('POST', '/jobs', { json: { component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } } });
      await node.until('the blocker to run', async () => ((await node.call('GET', `/jobs/${blocker.json.id}`)).json.status === 'processing' ? true : undefined));
      const queued = await node.call('POST', '/jobs', {
        json: {
          component: 'keboola.ex-generic-v2',
          configData: { parameters: { api: { baseUrl: apiBase, http: { headers: { 'X-Api-Token': { attr: '#token' } } } }, config: { '#token': secret, outputBucket: 'rotated', jobs: [{ endpoint: 'queued' }] } } },
        },
      });
      expect(queued.status).toBe(201);
      await node.stop();

      const otherKey = generateEncryptionKey();
      await expect(TestService.start({ dataDir: node.dataDir, args: ['--encryption-key', otherKey] }))
        .rejects.toThrow(`this node's encryption key (key id ${keyIdOf(parseEncryptionKey(otherKey))}) is not the project's (key id ${keyIdOf(oldKey)})`);

      const rotated = await sluice(['secrets', 'rotate-key', '--data-dir', node.dataDir]);
      expect(rotated.stderr).toBe('');
      expect(rotated.code).toBe(0);
      expect(rotated.stdout).toMatch(/^Re-encrypted [1-9]\d* # value\(s\) in \d+ configuration\(s\), row\(s\), version\(s\) and job\(s\) with the new key \(key id [0-9a-f]{16}\)\.\n/);
      const lines = readFileSync(keyFile, 'utf8').trim().split('\n');
      expect(lines).toHaveLength(1);
      const newKey = parseEncryptionKey(lines[0]);
      expect(keyIdOf(newKey)).not.toBe(keyIdOf(oldKey));
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(rotated.stdout).toContain(keyIdOf(newKey));
      expect(rotated.stdout + rotated.stderr).not.toContain(lines[0]);

      await node.start();
      const after = (await node.call('GET', `/v2/storage/components/sluice.echo/configs/${config.json.id}`)).json.configuration.parameters['#password'];
      expect(encryptedKeyId(after)).toBe(keyIdOf(newKey));
      const versions = (await node.call('GET', `/v2/storage/components/sluice.echo/configs/${config.json.id}/versions/1`)).json;
      expect(encryptedKeyId(versions.configuration.parameters['#password'])).toBe(keyIdOf(newKey));
      const waiting = (await node.call('GET', `/jobs/${queued.json.id}`)).json;
      expect(encryptedKeyId(waiting.configData.parameters.config['#token'])).toBe(keyIdOf(newKey));

      requests.length = 0;
      const done = await waitJob(queued.json.id, node);
      expect(done.status, JSON.stringify(done.result)).toBe('success');
      expect(requests.map((r) => [r.url, r.headers['x-api-token']])).toEqual([['/queued', secret]]);
      const echo = await waitJob((await node.call('POST', '/jobs', { json: { component: 'sluice.echo', config: config.json.id } })).json.id, node);
      expect(echo.status, JSON.stringify(echo.result)).toBe('success');
      expect(metadataFile(node).includes(secret)).toBe(false);

      // With the key in SLUICE_ENCRYPTION_KEY the new one must be given, and values of a lost key are listed, not dropped.
      await node.stop();
      const noNew = await sluice(['secrets', 'rotate-key', '--data-dir', node.dataDir], { SLUICE_ENCRYPTION_KEY: lines[0] });
      expect([noNew.code, noNew.stderr]).toEqual([2, 'sluice: The current key comes from SLUICE_ENCRYPTION_KEY (or --encryption-key): give the new one with --new-key (or SLUICE_NEW_ENCRYPTION_KEY).\n']);
      const lost = await sluice(['secrets', 'rotate-key', '--data-dir', node.dataDir, '--encryption-key', otherKey], { SLUICE_NEW_ENCRYPTION_KEY: generateEncryptionKey() });
      expect(lost.code).toBe(1);
      expect(lost.stderr).toMatch(/^sluice: \d+ # value\(s\) cannot be decrypted with the current key; nothing was changed:\n {2}configs\/sluice\.echo\//);
      expect(lost.stderr).toContain('--discard-unreadable');
      expect(readFileSync(keyFile, 'utf8').trim()).toBe(lines[0]);
      await node.start();
    } finally {
      await node.close();
    }
  });
});
