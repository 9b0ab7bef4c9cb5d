/**
 * The Jsonnet limits as Sluice's template columns meet them (the engine's own limits are tested
 * in packages/jsonnet/test/limits.test.ts): a record whose template crosses one fails with the
 * limit and the server flag that raises it.
 */
import { describe, expect, it } from 'vitest';
import { SluiceTemplateEngine } from '../../../src/adapters/jsonnet/sluice-engine.js';
import { createRecordContext } from '../../../src/pipeline/columns/index.js';
import { TemplateError } from '../../../src/pipeline/template-engine.js';

/** Generous for a loaded 2-core machine. */
const FAST_MS = 2500;

describe('limits of the template engine', () => {
  it('template columns: the record fails with the limit and the server flag that raises it', async () => {
    const engine = new SluiceTemplateEngine({ maxArrayLength: 1000 });
    const template = await engine.compile('std.join(",", ["x" for i in std.range(1, Body("n"))])');
    const record = (n: number) =>
      createRecordContext({ receivedAt: new Date(), ip: '127.0.0.1', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(JSON.stringify({ n })), signal: '' });
    expect(await template.evaluate(record(3))).toBe('"x,x,x"');
    const failed = await template.evaluate(record(1e9)).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(TemplateError);
    expect((failed as TemplateError).message).toBe('array length 1000000000 exceeds the limit of 1000 elements (--template-max-array-length)');
    expect((failed as TemplateError).kind).toBe('template');
    const slow = await engine.compile('std.length(std.sort(std.range(1, Body("n"))))');
    const started = Date.now();
    const timedOut = await slow.evaluate(record(900)).then(() => undefined, (err: unknown) => err);
    expect(timedOut).toBeUndefined();
    const fast = await new SluiceTemplateEngine().compile('std.length(std.sort(std.range(1, Body("n"))))');
    const budget = await fast.evaluate(record(9e6)).catch((err: unknown) => err);
    expect((budget as TemplateError).message).toBe('evaluation exceeded its time budget of 100 ms (--template-timeout)');
    expect(Date.now() - started).toBeLessThan(FAST_MS);
  });
});
