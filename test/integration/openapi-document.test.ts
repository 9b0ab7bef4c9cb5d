import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileErrors, validate } from '@readme/openapi-parser';
import { TestService } from '../helpers/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await TestService.start();
});
afterAll(async () => {
  await svc.close();
});

/** Every {name} of an OpenAPI path. */
const placeholders = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);

describe('the served OpenAPI document', () => {
  it('validates against the OpenAPI specification, with no error', async () => {
    const doc = await svc.call('GET', '/v1/documentation/openapi.json', { token: null });
    expect(doc.status).toBe(200);
    // validate() dereferences in place: it gets a copy.
    const result = await validate(structuredClone(doc.json));
    expect(result.valid ? '' : compileErrors(result)).toBe('');
    expect(result.valid).toBe(true);
  });

  it('declares every path parameter exactly where the path has it', async () => {
    const doc = (await svc.call('GET', '/v1/documentation/openapi.json', { token: null })).json;
    const wrong: string[] = [];
    for (const [path, operations] of Object.entries<Record<string, { parameters?: { in: string; name: string; required?: boolean }[] }>>(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const declared = (operation.parameters ?? []).filter((p) => p.in === 'path');
        const names = declared.map((p) => p.name).sort();
        if (JSON.stringify(names) !== JSON.stringify(placeholders(path).sort())) wrong.push(`${method} ${path}: ${names.join(', ')}`);
        for (const p of declared) if (p.required !== true) wrong.push(`${method} ${path}: ${p.name} not required`);
      }
    }
    expect(wrong).toEqual([]);
    // The configurations exist under both prefixes, each with its own parameters.
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
      '/v2/storage/components', '/v2/storage/branch/{branchId}/components', '/v2/storage/events/{id}', '/v2/storage/branch/{branchId}/events/{id}',
    ]));
  });

  it('keeps the exclusive bounds of the route schemas in their OpenAPI 3.0 form', async () => {
    const doc = (await svc.call('GET', '/v1/documentation/openapi.json', { token: null })).json;
    const timeout = doc.paths['/v2/storage/sql'].post.requestBody.content['application/json'].schema.properties.timeout;
    expect(timeout).toMatchObject({ type: 'number', minimum: 0, exclusiveMinimum: true });
    // The route itself still refuses 0 (draft-07 validation is unchanged).
    const zero = await svc.call('POST', '/v2/storage/sql', { json: { query: 'SELECT 1', timeout: 0 } });
    expect(zero.status).toBe(400);
  });
});
