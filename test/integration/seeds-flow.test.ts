/**
 * The three seeds together: a configuration of the generic extractor (seed 002) with
 * {{variables}} in its baseUrl and parameters (seed 001), run by the job queue with
 * variableValuesData against a local REST API that pages; the job ends success, the storage
 * tables hold every item, and the job log says which values were used and why paging stopped.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';
import { metricValue } from '../helpers/prometheus.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { TARGETS, targetServers } from '../helpers/targets.js';

let svc: TestService;
let api: http.Server;
let apiBase: string;
const requests: string[] = [];

/** 23 users, pages of `per_page` (pagenum pagination); only the key "k-42" may read them. */
function startApi(): Promise<void> {
  const users = Array.from({ length: 23 }, (_, i) => ({ id: i + 1, name: `user ${i + 1}`, address: { city: i % 2 ? 'Brno' : 'Prague' } }));
  api = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    requests.push(url.pathname + url.search);
    if (url.searchParams.get('key') !== 'k-42') {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad key"}');
      return;
    }
    if (url.pathname !== '/v2/users') {
      res.writeHead(404).end();
      return;
    }
    const page = Number(url.searchParams.get('page'));
    const perPage = Number(url.searchParams.get('per_page'));
    const items = users.slice((page - 1) * perPage, page * perPage);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ users: items }));
  });
  return new Promise((resolve) => api.listen(0, '127.0.0.1', () => {
    apiBase = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    resolve();
  }));
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

const servers = targetServers();

describe.each(TARGETS)('seeds on %s', (kind) => {
  beforeAll(async () => {
    await startApi();
    svc = await TestService.start({ args: (await servers.location(kind)).args });
  }, POSTGRES_START_TIMEOUT_MS);

  afterAll(async () => {
    requests.length = 0;
    await svc?.close();
    await new Promise((r) => api?.close(r));
  });

  describe('seeds together: variables, the job queue and the generic extractor', () => {
    it('pages a local API into storage tables, with the values and the stop reason in the job log', async () => {
      const vars = await svc.call('POST', '/v2/storage/components/keboola.variables/configs', {
        body: form({ name: 'API access', configuration: JSON.stringify({ variables: [{ name: 'apiHost', type: 'string' }, { name: 'apiKey', type: 'string' }, { name: 'perPage', type: 'string' }] }) }),
        contentType: 'application/x-www-form-urlencoded',
      });
      expect(vars.status).toBe(201);

      const extractor = {
        variables_id: vars.json.id,
        parameters: {
          api: {
            baseUrl: '{{apiHost}}/v2/',
            pagination: { method: 'pagenum', limit: '{{perPage}}', limitParam: 'per_page' },
            http: { defaultOptions: { params: { key: '{{apiKey}}' } } },
          },
          config: {
            outputBucket: 'crm',
            jobs: [{ endpoint: 'users', dataField: 'users' }],
          },
        },
      };
      const config = await svc.call('POST', '/v2/storage/components/keboola.ex-generic-v2/configs', {
        json: { name: 'CRM users', configuration: extractor },
      });
      expect(config.status).toBe(201);

      const created = await svc.call('POST', '/jobs', {
        json: {
          component: 'keboola.ex-generic-v2',
          config: config.json.id,
          variableValuesData: { values: [{ name: 'apiHost', value: apiBase }, { name: 'apiKey', value: 'k-42' }, { name: 'perPage', value: '10' }] },
        },
      });
      expect(created.status).toBe(201);
      const job = await svc.until('the job to finish', async () => {
        const res = await svc.call('GET', `/jobs/${created.json.id}`);
        return res.json.isFinished ? res.json : undefined;
      }, 60_000);
      if (job.status !== 'success') {
        const log = (await svc.call('GET', `/v2/storage/events?runId=${job.runId}&limit=100`)).json as Array<{ message: string }>;
        throw new Error(`job ${job.status}: ${JSON.stringify(job.result)}\n${log.map((e) => e.message).join('\n')}`);
      }
      const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
      expect([...job.result.variables].sort(byName)).toEqual([{ name: 'apiHost', value: apiBase }, { name: 'apiKey', value: 'k-42' }, { name: 'perPage', value: '10' }]);

      // Three pages of 10, 10 and 3: the short page stops paging.
      const pages = requests.filter((r) => r.startsWith('/v2/users')).map((r) => Object.fromEntries(new URL(r, 'http://x').searchParams));
      expect(pages).toEqual([1, 2, 3].map((page) => ({ key: 'k-42', per_page: '10', page: String(page) })));

      const users = await svc.call('GET', '/v2/storage/tables/in.c-crm.users/data-preview?limit=100');
      expect(users.status).toBe(200);
      const rows = parse(users.text, { columns: true }) as Array<Record<string, string>>;
      expect(rows).toHaveLength(23);
      expect(Object.keys(rows[0])).toEqual(['id', 'name', 'address_city']);
      expect(rows.find((r) => r.id === '2')).toEqual({ id: '2', name: 'user 2', address_city: 'Brno' });

      const log = (await svc.call('GET', `/v2/storage/events?runId=${job.runId}&limit=100`)).json as Array<{ message: string }>;
      const messages = log.map((e) => e.message);
      expect(messages).toContain('Replacing variables using inline values.');
      const replaced = messages.find((m) => m.startsWith('Replaced values for variables: '));
      expect(replaced?.slice('Replaced values for variables: '.length).split(', ').sort()).toEqual(['apiHost', 'apiKey', 'perPage']);
      expect(messages.some((m) => m.includes('Pagination stopped, response is smaller than limit.'))).toBe(true);

      // The node's metrics count the job and what the extractor fetched.
      const metrics = (await svc.call('GET', '/metrics', { token: null })).text;
      expect(metricValue(metrics, 'sluice_jobs_total', { component: 'keboola.ex-generic-v2', status: 'success' })).toBe(1);
      expect(metricValue(metrics, 'sluice_extractor_pages_total')).toBe(3);
      expect(metricValue(metrics, 'sluice_extractor_items_total')).toBe(23);
    });
  });
});
