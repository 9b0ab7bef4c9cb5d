/**
 * Cluster mode against a real broker: two `sluice serve --kafka` nodes of one project share
 * definitions, tasks and tokens through the metadata topic. A write answered by one node can be
 * read on the other; a node that was down catches up at its start, deletions included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { pino } from 'pino';
import { TestService } from '../helpers/service.js';
import { KAFKA_START_TIMEOUT_MS, startTestBroker, type TestBroker } from '../helpers/kafka-broker.js';

let broker: TestBroker;
let a: TestService;
let b: TestService;
/** Nodes with some roles only: ingestion only, and the management API only. */
let ingestOnly: TestService;
let apiOnly: TestService;
const B = (svc: TestService) => `/v1/branches/${svc.branchId}`;

/** Polls node `svc` until `path` answers `status`. */
async function seenOn(svc: TestService, path: string, status = 200, token?: string): Promise<any> {
  return svc.until(`${path} answering ${status}`, async () => {
    const res = await svc.call('GET', path, token === undefined ? {} : { token });
    return res.status === status ? (res.json ?? null) : undefined;
  }, 10_000);
}

beforeAll(async () => {
  broker = await startTestBroker();
  const logger = pino({ level: process.env.SLUICE_TEST_LOG ?? 'silent' });
  const args = ['--check-interval', '100ms', '--kafka', broker.bootstrap, '--kafka-replication', '1'];
  a = await TestService.start({ args, logger: logger.child({ node: 'a' }) });
  b = await TestService.start({ args, logger: logger.child({ node: 'b' }) });
  ingestOnly = await TestService.start({ args: [...args, '--roles', 'ingest'], logger: logger.child({ node: 'ingest' }) });
  apiOnly = await TestService.start({ args: [...args, '--roles', 'api'], logger: logger.child({ node: 'api' }) });
}, KAFKA_START_TIMEOUT_MS);

afterAll(async () => {
  await a?.close();
  await b?.close();
  await ingestOnly?.close();
  await apiOnly?.close();
  await broker?.stop();
}, 60_000);

describe('cluster metadata through Kafka', () => {
  it('keeps the metadata in one compacted topic of the project', async () => {
    const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const topic = `sluice.${a.projectId}.metadata`;
      expect(await admin.listTopics()).toContain(topic);
      const config = await admin.describeConfigs({ resources: [{ type: 2, name: topic, configNames: ['cleanup.policy'] }], includeSynonyms: false });
      expect(config.resources[0].configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue).toBe('compact');
    } finally {
      await admin.disconnect();
    }
  });

  it('shows a source created on one node on the other, with its task, and takes its events there', async () => {
    const created = await a.call('POST', `${B(a)}/sources`, { json: { sourceId: 'shared', name: 'Shared', type: 'http' } });
    expect(created.status).toBe(202);
    // The task is readable on the other node as soon as the first one answered (a task it does
    // not know yet is looked up again after it caught up with the metadata topic).
    const taskPath = new URL(created.json.url).pathname;
    expect((await b.call('GET', taskPath)).status).toBe(200);
    expect((await a.waitTask(created.json.url)).status).toBe('success');
    await b.until('task finished on b', async () => ((await b.call('GET', taskPath)).json.status === 'success' ? true : undefined), 10_000);

    const onB = await seenOn(b, `${B(b)}/sources/shared`);
    expect(onB.name).toBe('Shared');
    // The secret travelled too: node b accepts events for it.
    const res = await b.call('POST', await b.ingestPath('shared'), { token: null, body: '{"n":1}' });
    expect(res.status).toBe(200);
  });

  it('authenticates on every node with a token created on one', async () => {
    const res = await a.call('POST', '/v2/storage/tokens', { json: { description: 'cluster-wide', canManageBuckets: true } });
    expect(res.status).toBe(201);
    const secret = res.json.token as string;
    // At once on the other node: a token it does not know yet is looked up again after it caught up.
    const verified = await b.call('GET', '/v2/storage/tokens/verify', { token: secret });
    expect(verified.status).toBe(200);
    expect(verified.json.description).toBe('cluster-wide');
    // Deleted on b: refused on a.
    expect((await b.call('DELETE', `/v2/storage/tokens/${res.json.id}`)).status).toBe(204);
    await seenOn(a, '/v2/storage/tokens/verify', 401, secret);
  });

  it('brings a node that was down up to date at its start, deletions included', async () => {
    await a.task('POST', `${B(a)}/sources`, { json: { sourceId: 'short-lived', name: 'Short', type: 'http' } });
    await seenOn(b, `${B(b)}/sources/short-lived`);
    await b.stop();
    await a.task('DELETE', `${B(a)}/sources/short-lived`);
    await a.task('POST', `${B(a)}/sources`, { json: { sourceId: 'while-down', name: 'While down', type: 'http' } });
    await b.start();
    // Right after the start, before any polling: the replay ran before the node listened.
    expect((await b.call('GET', `${B(b)}/sources/short-lived`)).status).toBe(404);
    expect((await b.call('GET', `${B(b)}/sources/while-down`)).json.name).toBe('While down');
  });

  it('shares a large configuration (its versions too): a write of more than Kafka\'s 1 MB record batch', async () => {
    // The configuration and its first version are one transaction of about 2.4 MB.
    const blob = 'x'.repeat(1_200_000);
    const created = await a.call('POST', '/v2/storage/components/sluice.echo/configs', { json: { name: 'Large', configuration: { parameters: { blob } } } });
    expect(created.status, created.text.slice(0, 500)).toBe(201);
    const onB = await seenOn(b, `/v2/storage/components/sluice.echo/configs/${created.json.id}`);
    expect(onB.configuration.parameters.blob).toHaveLength(blob.length);
    expect(onB.version).toBe(1);
  });

  it('runs only the roles a node is given', async () => {
    await a.task('POST', `${B(a)}/sources`, { json: { sourceId: 'roles', name: 'Roles', type: 'http' } });
    const path = await a.ingestPath('roles');
    // Ingestion only: events are taken, the management API is not there, the health check is.
    await ingestOnly.until('source known on the ingest node', async () => ((await ingestOnly.call('POST', path, { token: null, body: '{"n":1}' })).status === 200 ? true : undefined), 10_000);
    const api = await ingestOnly.call('GET', `${B(ingestOnly)}/sources`);
    expect(api.status).toBe(404);
    expect(api.json.error).toBe('stream.api.endpointNotFound');
    expect((await ingestOnly.call('GET', '/health-check', { token: null })).status).toBe(200);
    // The management API only: no ingestion, and jobs are refused rather than left waiting.
    expect((await apiOnly.call('GET', `${B(apiOnly)}/sources/roles`)).status).toBe(200);
    expect((await apiOnly.call('POST', path, { token: null, body: '{"n":2}' })).status).toBe(404);
    const job = await apiOnly.call('POST', '/jobs', { json: { component: 'sluice.echo', mode: 'run', configData: {} } });
    expect(job.status).toBe(503);
    expect(job.text).toMatch(/does not run jobs/);
  });

  it('gives tokens created on two nodes at the same moment different ids, and keeps them all', async () => {
    const create = (svc: TestService, i: number) => svc.call('POST', '/v2/storage/tokens', { json: { description: `burst ${i}`, canManageBuckets: false } });
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i % 2 === 0 ? a : b, i)));
    expect(made.map((r) => r.status)).toEqual(Array(20).fill(201));
    const ids = made.map((r) => r.json.id as string);
    expect(new Set(ids).size).toBe(20);
    // Every token works on both nodes.
    for (const r of made) {
      for (const node of [a, b]) expect((await seenOn(node, '/v2/storage/tokens/verify', 200, r.json.token)).description).toBe(r.json.description);
    }
  });
});
