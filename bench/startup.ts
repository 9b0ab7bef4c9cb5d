import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, median, round2, serveNodeFlags } from './util.js';

/**
 * Time from spawning `node dist/main.js serve` on a fresh data directory until /health-check
 * answers, against the same measure for a bare Node HTTP server (the baseline: what Node itself
 * costs). Medians over N runs, alternating the two so machine noise hits both alike.
 */
export async function startupBench(args: string[]): Promise<Record<string, unknown>> {
  const runs = Number(args[args.indexOf('--runs') + 1]) || 9;
  const main = resolve('dist/main.js');
  if (!existsSync(main)) throw new Error('dist/main.js is missing: run "npm run build" first.');
  const baselineScript = "require('http').createServer((q,s)=>s.end('OK')).listen(Number(process.env.PORT),'127.0.0.1')";
  const sluice: number[] = [];
  const baseline: number[] = [];
  for (let i = 0; i < runs; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
    try {
      baseline.push(await timeToReady([...serveNodeFlags(), '-e', baselineScript], {}));
      sluice.push(await timeToReady([...serveNodeFlags(), main, 'serve'], { SLUICE_DATA_DIR: dir, SLUICE_HOST: '127.0.0.1', SLUICE_LOG_LEVEL: 'warn', SLUICE_MASTER_TOKEN: 'bench' }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    process.stdout.write(`run ${i + 1}/${runs}: sluice ${sluice[i].toFixed(0)} ms, bare node ${baseline[i].toFixed(0)} ms\n`);
  }
  const sluiceMs = median(sluice);
  const baselineMs = median(baseline);
  return { runs, sluiceReadyMsMedian: round2(sluiceMs), baselineReadyMsMedian: round2(baselineMs), ratio: round2(sluiceMs / baselineMs) };
}

async function timeToReady(argv: string[], env: Record<string, string>): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, argv, { env: { PATH: process.env.PATH ?? '', PORT: String(port), SLUICE_PORT: String(port), SLUICE_OTLP_GRPC_PORT: '0', ...env }, stdio: 'ignore' });
  try {
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/health-check`);
        if (res.ok) return performance.now() - started;
      } catch {
        // not yet listening
      }
      if (performance.now() - started > 30_000) throw new Error('not ready within 30 s');
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

