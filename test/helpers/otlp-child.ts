/**
 * A real `sluice serve` (dist/main.js, a child process) ready for OTLP clients that are not
 * ours (the Collector, telemetrygen): an OTLP source with the default logs, metrics and traces
 * sinks, importing every second, and the rows of their tables by service name.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { ChildService, freePort, until } from './child-service.js';

export interface OtlpChild {
  svc: ChildService;
  /** host:port of OTLP/HTTP (the API's listener). */
  httpEndpoint: string;
  /** host:port of OTLP/gRPC, or undefined when it is off. */
  grpcEndpoint?: string;
  close(): Promise<void>;
}

/** Starts Sluice with 1 s import floors and OTLP/gRPC on a free port (`grpc: true`) or off. */
export async function startOtlpChild(options: { grpc: boolean }): Promise<OtlpChild> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-otel-clients-'));
  const grpcPort = options.grpc ? await freePort() : 0;
  const svc = new ChildService({
    dataDir,
    env: {
      SLUICE_UPLOAD_MIN_INTERVAL: '1s',
      SLUICE_IMPORT_MIN_INTERVAL: '1s',
      SLUICE_OTLP_GRPC_PORT: String(grpcPort),
    },
  });
  try {
    await svc.start(60_000);
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    svc,
    httpEndpoint: `127.0.0.1:${svc.port}`,
    grpcEndpoint: options.grpc ? `127.0.0.1:${grpcPort}` : undefined,
    async close() {
      await svc.stop().catch(() => svc.dispose());
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface OtlpSource {
  sourceId: string;
  secret: string;
  /** The path of `otlp.baseUrl` (the routes authenticated by `Authorization: Bearer <secret>`). */
  basePath: string;
}

/** Creates an OTLP source with the default sinks, whose slices upload and files import every second. */
export async function otlpSourceWithTables(svc: ChildService, sourceId: string): Promise<OtlpSource> {
  const sources = '/v1/branches/default/sources';
  await svc.task('POST', sources, { sourceId, name: sourceId, type: 'otlp' });
  const created = await svc.call('POST', `${sources}/${sourceId}/otlp/default-sinks`);
  if (created.status !== 202) throw new Error(`default sinks: HTTP ${created.status} ${created.text}`);
  for (const sink of created.json.sinks as Array<{ sinkId: string; task: { url: string } }>) {
    const task = new URL(sink.task.url).pathname;
    const status = await until(`the task of sink ${sink.sinkId}`, async () => {
      const s = (await svc.call('GET', task)).json?.status as string | undefined;
      return s === 'processing' ? undefined : s;
    }, 15_000, 50);
    if (status !== 'success') throw new Error(`sink ${sink.sinkId}: task ${status}`);
    await svc.patchSinkSettings(sourceId, sink.sinkId, {
      'storage.level.staging.upload.trigger.interval': '1s',
      'storage.level.target.import.trigger.interval': '1s',
    });
  }
  const source = await svc.call('GET', `${sources}/${sourceId}`);
  return { sourceId, secret: source.json.otlp.secret as string, basePath: new URL(source.json.otlp.baseUrl as string).pathname };
}

export type Row = Record<string, string>;

/** The rows of a table (CSV of data-preview, by column name); none while it does not exist. */
export async function tableRows(svc: ChildService, tableId: string): Promise<Row[]> {
  const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
  if (res.status === 404) return [];
  if (res.status !== 200) throw new Error(`data-preview of ${tableId}: HTTP ${res.status} ${res.text}`);
  return parse(res.text, { columns: true }) as Row[];
}

/**
 * Waits until the table holds at least `expected` rows of service `service` and returns them
 * (waiting one more import cycle, so that rows beyond the expected would show).
 */
export async function rowsOfService(svc: ChildService, tableId: string, service: string, expected: number, timeoutMs = 60_000): Promise<Row[]> {
  const of = async () => (await tableRows(svc, tableId)).filter((r) => r.service_name === service);
  await until(`${expected} rows of ${service} in ${tableId}`, async () => ((await of()).length >= expected ? true : undefined), timeoutMs, 250);
  await new Promise((r) => setTimeout(r, 2500));
  return of();
}
