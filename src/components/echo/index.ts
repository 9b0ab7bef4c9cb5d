/**
 * `sluice.echo`: a small real component for trying the queue and for its tests. It writes its
 * resolved parameters into the table `echo` (columns `name`, `value`: one row per leaf of
 * `parameters`, names as dotted paths, values as strings, objects as JSON) and logs a progress
 * line per row. What is under a `#` key (a secret) is written as `*****`: a job's output table
 * never holds a secret.
 *
 * Optional parameters that steer it (all off by default):
 * - `destination`: table id for the output (a manifest is written); default: the job's bucket.
 * - `incremental`: load incrementally instead of replacing the table.
 * - `countRuns`: keep `{"runs": n}` in its state (`in/state.json` -> `out/state.json`).
 * - `sleepSeconds`: wait this long first, stopping early when the job is killed.
 * - `blockSeconds`: block its event loop this long (a misbehaving component; only SIGKILL stops it).
 * - `fail`: end with this user error; `crash`: exit the process abruptly.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isSecretKey, SECRET_MASK } from '../../model/secret-values.js';
import { UserError, type Component, type ComponentContext } from '../contract.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What the table shows for a secret. */
export const MASK = SECRET_MASK;

/**
 * Leaves of a JSON value as [dotted path, string value]; arrays by index. Every leaf under a `#`
 * key (at any depth below it) is masked.
 */
export function flatten(value: Json, prefix = '', secret = false): [string, string][] {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    if (entries.length === 0) return prefix ? [[prefix, secret ? MASK : JSON.stringify(value)]] : [];
    return entries.flatMap(([k, v]) => flatten(v, prefix ? `${prefix}.${k}` : k, secret || (!Array.isArray(value) && isSecretKey(k))));
  }
  return [[prefix, secret ? MASK : value === null ? '' : String(value)]];
}

/** One CSV field, RFC 4180. */
const csvField = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new UserError('Killed.'));
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new UserError('Killed.'));
    }, { once: true });
  });
}

export const component: Component = {
  id: 'sluice.echo',
  async run(ctx: ComponentContext) {
    const config = ctx.config as { parameters?: Record<string, Json> };
    const parameters = config.parameters ?? {};
    if (typeof parameters.sleepSeconds === 'number') {
      ctx.log(`Sleeping ${parameters.sleepSeconds} s.`);
      await sleep(parameters.sleepSeconds * 1000, ctx.signal);
    }
    if (typeof parameters.blockSeconds === 'number') {
      ctx.log(`Blocking for ${parameters.blockSeconds} s.`);
      const until = Date.now() + parameters.blockSeconds * 1000;
      while (Date.now() < until) { /* deliberately unresponsive */ }
    }
    if (parameters.crash === true) process.exit(3);
    if (typeof parameters.fail === 'string') throw new UserError(parameters.fail);

    const rows = flatten(parameters as Json);
    const tables = join(ctx.dataDir, 'out', 'tables');
    await mkdir(tables, { recursive: true });
    const csv = ['name,value', ...rows.map(([k, v]) => `${csvField(k)},${csvField(v)}`)].join('\r\n') + '\r\n';
    await writeFile(join(tables, 'echo.csv'), csv);
    if (typeof parameters.destination === 'string') {
      await writeFile(join(tables, 'echo.csv.manifest'), JSON.stringify({
        destination: parameters.destination,
        incremental: parameters.incremental === true,
      }));
    }
    if (parameters.countRuns === true) {
      const previous = ctx.state as { runs?: number };
      await writeFile(join(ctx.dataDir, 'out', 'state.json'), JSON.stringify({ runs: (previous.runs ?? 0) + 1 }));
    }
    for (const [name] of rows) ctx.log(`Parameter "${name}" written.`);
    return { message: `Echoed ${rows.length} parameter${rows.length === 1 ? '' : 's'}.` };
  },
};
