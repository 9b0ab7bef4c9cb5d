/**
 * `sluice status`: a running server at a glance — its readiness (and what is not ready), its
 * version, and each source's sinks with their table, state, lag (records not mapped yet, from
 * /metrics when it answers without a token of its own) and mapping failures. Exit code 0 when
 * the node is ready and no sink has failures, 1 otherwise (scripts can wait on it).
 */
import { parseCommandLine } from './args.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, resolveConnection, StorageClient } from './client.js';
import { reportErrors, type CliIo } from './errors.js';
import { formatCount } from './numbers.js';
import { alignedColumns } from './sql-output.js';
import type { SinksAnswer, SinkView, SourcesAnswer, SourceView } from '../contract/stream-sources.js';
import { allPages, stateOf } from './resources.js';

export const STATUS_USAGE = `Usage: sluice status [options]

A running server at a glance: readiness, version, and every source's sinks with their table,
state, lag (records not mapped yet) and mapping failures. Exit code 0 when the node is ready and
no sink has a failure, 1 otherwise.

Options:
  --help              this message

${CONNECTION_HELP}`;

const OPTIONS = { ...CONNECTION_OPTIONS, help: { type: 'boolean', short: 'h' } } as const;
const BRANCH = '/v1/branches/default';

interface Readiness {
  status?: string;
  checks?: Record<string, { ok?: boolean; reason?: string } | unknown>;
}

export async function runStatusCli(argv: string[], io: CliIo = process): Promise<number> {
  return reportErrors(io, async () => {
    const { values } = parseCommandLine('status', argv, OPTIONS);
    if (values.help) {
      io.stdout.write(STATUS_USAGE);
      return 0;
    }
    const client = new StorageClient(resolveConnection(values, io.env));
    const [ready, banner, metrics] = await Promise.all([client.answer('/health/ready'), client.answer('/v1'), client.answer('/metrics')]);
    const readiness = parse<Readiness>(ready.text) ?? {};
    const version = banner.headers.get('x-sluice-version');
    const notReady = Object.entries(readiness.checks ?? {}).filter(([, c]) => (c as { ok?: boolean }).ok === false)
      .map(([name, c]) => `${name}${(c as { reason?: string }).reason ? `: ${(c as { reason?: string }).reason}` : ''}`);
    const lines = [`${client.url}: ${ready.status === 200 ? 'ready' : `NOT READY${notReady.length ? ` (${notReady.join('; ')})` : ''}`}${version ? `, version ${version}` : ''}`];

    const lags = metrics.status === 200 ? lagsOf(metrics.text) : undefined;
    const sources = await allPages<SourceView>(client, `${BRANCH}/sources`, (a: SourcesAnswer) => a.sources);
    const rows: unknown[][] = [];
    let failing = 0;
    for (const source of sources) {
      const sinks = await allPages<SinkView>(client, `${BRANCH}/sources/${encodeURIComponent(source.sourceId)}/sinks`, (a: SinksAnswer) => a.sinks);
      if (sinks.length === 0) rows.push([source.sourceId, source.type, stateOf(source), '', '', '', '', '']);
      for (const sink of sinks) {
        const failures = await client.json<{ count: number }>('GET', `${BRANCH}/sources/${encodeURIComponent(source.sourceId)}/sinks/${encodeURIComponent(sink.sinkId)}/failures?limit=1`);
        if (failures.count > 0) failing++;
        const lag = lags?.get(`${source.sourceId}/${sink.sinkId}`);
        rows.push([source.sourceId, source.type, stateOf(source), sink.sinkId, sink.table.tableId, stateOf(sink), lag === undefined ? (lags ? '0' : '?') : formatCount(lag), formatCount(failures.count)]);
      }
    }
    lines.push('', ...alignedColumns(['source', 'type', 'state', 'sink', 'table', 'sink state', 'lag', 'failures'], rows, [false, false, false, false, false, false, true, true]));
    const sinkCount = rows.filter((r) => r[3] !== '').length;
    lines.push(`${formatCount(sources.length)} source${sources.length === 1 ? '' : 's'}, ${formatCount(sinkCount)} sink${sinkCount === 1 ? '' : 's'}`
      + `${failing > 0 ? `, ${failing} with mapping failures (GET ${BRANCH}/sources/<source>/sinks/<sink>/failures lists them; the console shows them)` : ''}`
      + `${lags ? '' : '; lag: ? (/metrics asks for its own token: --metrics-token)'}`);
    io.stdout.write(`${lines.join('\n')}\n`);
    return ready.status === 200 && failing === 0 ? 0 : 1;
  });
}

function parse<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** sluice_sink_lag_records by "source/sink", from the Prometheus text. */
function lagsOf(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^sluice_sink_lag_records\{([^}]*)\} (\S+)$/gm)) {
    const source = /source="([^"]*)"/.exec(m[1])?.[1];
    const sink = /sink="([^"]*)"/.exec(m[1])?.[1];
    if (source !== undefined && sink !== undefined) out.set(`${source}/${sink}`, (out.get(`${source}/${sink}`) ?? 0) + Number(m[2]));
  }
  return out;
}
