import { describe, expect, it } from 'vitest';
import { failedColumn, FailureLogLimiter, FAILURE_LOG_WINDOW_MS } from '../../../src/actors/sink-writer/failure-log.js';
import { SluiceTemplateEngine } from '../../../src/adapters/jsonnet/sluice-engine.js';
import type { Column } from '../../../src/model/definition.js';
import { failureKind } from '../../../src/observability/metrics.js';
import { BatchRenderer } from '../../../src/pipeline/batch-render.js';

/** A limiter on a clock the test moves. */
function limiter() {
  let now = 1_000_000;
  const log = new FailureLogLimiter({ now: () => now });
  return { log, advance: (ms: number) => (now += ms) };
}

describe('FailureLogLimiter', () => {
  it('logs the first failure of a window, counts the rest, and reports the count once the minute has ended', () => {
    const { log, advance } = limiter();
    expect(log.failed('s')).toEqual({ logThis: true });
    for (let i = 0; i < 5; i++) {
      advance(1000);
      expect(log.failed('s')).toEqual({ logThis: false });
    }
    // Within the minute: nothing to report yet.
    advance(FAILURE_LOG_WINDOW_MS - 5001);
    expect(log.ended('s')).toBeUndefined();
    advance(1);
    expect(log.ended('s')).toBe(5);
    // Reported once; the window is closed, so the next failure is logged with its details.
    expect(log.ended('s')).toBeUndefined();
    advance(10);
    expect(log.failed('s')).toEqual({ logThis: true });
  });

  it('reports the count with the next failure when no tick came after the minute', () => {
    const { log, advance } = limiter();
    log.failed('s');
    log.failed('s');
    log.failed('s');
    advance(FAILURE_LOG_WINDOW_MS + 30_000);
    // The previous window's two, then this one with its details (it opens a new window).
    expect(log.failed('s')).toEqual({ moreBefore: 2, logThis: true });
    expect(log.failed('s')).toEqual({ logThis: false });
    advance(FAILURE_LOG_WINDOW_MS);
    expect(log.ended('s')).toBe(1);
  });

  it('says nothing when a window ends with no failure after the logged one', () => {
    const { log, advance } = limiter();
    log.failed('s');
    advance(FAILURE_LOG_WINDOW_MS);
    expect(log.ended('s')).toBeUndefined();
    expect(log.failed('s')).toEqual({ logThis: true });
    advance(FAILURE_LOG_WINDOW_MS);
    expect(log.failed('s')).toEqual({ logThis: true });
  });

  it('keeps one window per sink: sinks do not hold each other back', () => {
    const { log, advance } = limiter();
    expect(log.failed('a')).toEqual({ logThis: true });
    expect(log.failed('a')).toEqual({ logThis: false });
    advance(30_000);
    expect(log.failed('b')).toEqual({ logThis: true });
    expect(log.failed('b')).toEqual({ logThis: false });
    expect(log.failed('b')).toEqual({ logThis: false });
    advance(30_000);
    // a's minute is over, b's is not.
    expect(log.ended('a')).toBe(1);
    expect(log.ended('b')).toBeUndefined();
    expect(log.failed('b')).toEqual({ logThis: false });
    advance(30_000);
    expect(log.ended('b')).toBe(3);
    expect(log.ended('never-failed')).toBeUndefined();
  });
});

describe('failedColumn', () => {
  it('takes the renderer\'s column, or reads it from the reason', () => {
    expect(failedColumn({ reason: 'x', column: 'user' })).toBe('user');
    expect(failedColumn({ reason: 'Invalid value for column "user": path "user.id" not found in the body.' })).toBe('user');
    expect(failedColumn({ reason: 'nope' })).toBeUndefined();
  });
});

describe('failureKind of the reasons the renderers produce', () => {
  const json = { 'Content-Type': 'application/json' };
  const record = (body: string, headers: Record<string, string> = json) => ({ offset: 1, record: { receivedAt: new Date(0), ip: '', headers, body: Buffer.from(body), signal: '' as const } });
  const cases: Array<[string, Column[], ReturnType<typeof record>, string]> = [
    ['path column, path missing', [{ type: 'path', name: 'user', path: 'user.id' }], record('{}'), 'path_not_found'],
    ['template, Body() path missing', [{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'Body("a.b")' } }], record('{}'), 'path_not_found'],
    ['template, Header() missing', [{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'Header("X-Missing")' } }], record('{}'), 'path_not_found'],
    ['template, error()', [{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'error "no good"' } }], record('{}'), 'template'],
    ['template, runtime error', [{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'Body("a") - 1' } }], record('{"a":"x"}'), 'template'],
    ['path column, body not JSON', [{ type: 'path', name: 'user', path: 'user' }], record('not json'), 'invalid_value'],
    ['path column, unsupported content type', [{ type: 'path', name: 'user', path: 'user' }], record('x', { 'Content-Type': 'text/plain' }), 'invalid_value'],
    ['typed path column, a value that does not convert', [{ type: 'path', name: 'n', path: 'n', dataType: 'INTEGER' }], record('{"n":"abc"}'), 'invalid_value'],
    ['typed template column, a value that does not convert', [{ type: 'template', name: 'd', dataType: 'DATE', template: { language: 'jsonnet', content: '"2026-13-01"' } }], record('{}'), 'invalid_value'],
    ['key column without a value', [{ type: 'path', name: 'id', path: 'id', dataType: 'STRING', primaryKey: true }], record('{}'), 'path_not_found'],
    ['key column with a value too long', [{ type: 'path', name: 'id', path: 'id', primaryKey: true }], record(`{"id":"${'x'.repeat(3000)}"}`), 'invalid_value'],
  ];

  it.each(cases)('%s', async (_name, columns, rec, kind) => {
    const [rendered] = await new BatchRenderer(new SluiceTemplateEngine()).render([rec], [{ columns, after: 0 }]);
    expect(rendered.failures).toHaveLength(1);
    const [failure] = rendered.failures;
    expect(failure.column).toBe(columns[0].name);
    // With the renderer's kind, and from the reason alone (as stored), the same kind.
    expect(failureKind(failure.reason, failure.kind)).toBe(kind);
    expect(failureKind(failure.reason)).toBe(kind);
  });

  it('calls a reason it cannot place "other"', () => {
    expect(failureKind('something broke')).toBe('other');
    expect(failureKind('x', 'internal')).toBe('other');
  });
});
