/**
 * The Versions tab of a source: every version (GET .../versions, all pages), a comparison of one
 * with the current version (GET .../versions/<n>), and rollback (PUT .../versions/<n>/rollback).
 *
 * What the API keeps per version is its number, hash, description, time and author (not the old
 * definition itself), so the comparison shows those fields line by line; the hash covers the
 * definition (name, description, type, settings), so equal hashes mean the same definition.
 */
import { useState } from 'preact/hooks';
import { api, runTask } from '../api';
import { useLoad } from '../widgets/load';
import { ActionButton, ErrorText, Loading, Time, WriteOnly } from '../widgets/common';
import { sourcePath } from './source-model';
import type { SourceView, Version, VersionsAnswer } from '../../contract/stream-sources';

/** Every version, oldest first: the API answers 100 at most per page. */
async function loadVersions(sourceId: string): Promise<Version[]> {
  const all: Version[] = [];
  for (let afterId = '', pages = 0; pages < 20; pages++) {
    const query = afterId ? `?afterId=${encodeURIComponent(afterId)}` : '';
    const answer = await api<VersionsAnswer>('GET', `${sourcePath(sourceId)}/versions${query}`);
    all.push(...answer.versions);
    if (answer.versions.length < answer.page.limit || !answer.page.lastId || answer.page.lastId === afterId) break;
    afterId = answer.page.lastId;
  }
  return all;
}

export function SourceVersions({ source, onChanged }: { source: SourceView; onChanged: () => Promise<void> }) {
  const current = source.version.number;
  // Loaded again whenever the current version changes (the page polls the source).
  const { data, error } = useLoad(() => loadVersions(source.sourceId), [source.sourceId, current]);
  const [compared, setCompared] = useState<number | undefined>(undefined);
  const rollback = async (n: number) => {
    await runTask('PUT', `${sourcePath(source.sourceId)}/versions/${n}/rollback`);
    await onChanged();
    setCompared(undefined);
  };
  return (
    <>
      <h2>Versions</h2>
      <p class="hint">Every change but a delete makes a version. A rollback makes a new version with the old one's name, description, type and settings.</p>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {compared !== undefined && compared !== current && (
        <VersionDiff source={source} number={compared} onClose={() => setCompared(undefined)} />
      )}
      {data && (
        <div class="scroll">
          <table class="list" aria-label="Versions">
            <thead>
              <tr>
                <th scope="col">Version</th><th scope="col">Description</th><th scope="col">When</th><th scope="col">By</th>
                <th scope="col">Hash</th><th scope="col"><span class="muted">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {[...data].reverse().map((v) => (
                <tr key={v.number} aria-current={v.number === current ? 'true' : undefined}>
                  <td>{v.number}{v.number === current && <span class="badge on src-current">current</span>}</td>
                  <td>{v.description}</td>
                  <td><Time iso={v.at} /></td>
                  <td>{v.by?.tokenDesc ?? v.by?.userName ?? '—'}</td>
                  <td><code>{v.hash}</code></td>
                  <td>
                    {v.number !== current && (
                      <div class="actions src-row-actions">
                        <button type="button" class="small" aria-label={`Compare version ${v.number} with the current`} onClick={() => setCompared(v.number)}>
                          Compare
                        </button>
                        <WriteOnly>
                          <ActionButton
                            class="small"
                            label={`Roll back to version ${v.number}`}
                            confirm={`Roll "${source.name}" back to version ${v.number}? This makes a new version with version ${v.number}'s definition.`}
                            onAction={() => rollback(v.number)}
                          >
                            Roll back
                          </ActionButton>
                        </WriteOnly>
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

type Line = { kind: 'same' | 'del' | 'add'; key: string; value: string };

/** An object as `path: value` lines (nested keys joined by dots). */
export function flatten(value: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.set(prefix, typeof value === 'string' ? value : JSON.stringify(value));
  }
  return out;
}

/** Line-by-line differences of two flattened objects, in the old one's key order, then new keys. */
export function diffLines(before: Map<string, string>, after: Map<string, string>): Line[] {
  const lines: Line[] = [];
  for (const [key, value] of before) {
    const now = after.get(key);
    if (now === value) lines.push({ kind: 'same', key, value });
    else {
      lines.push({ kind: 'del', key, value });
      if (now !== undefined) lines.push({ kind: 'add', key, value: now });
    }
  }
  for (const [key, value] of after) if (!before.has(key)) lines.push({ kind: 'add', key, value });
  return lines;
}

const SIGN = { same: ' ', del: '−', add: '+' };

function VersionDiff({ source, number, onClose }: { source: SourceView; number: number; onClose: () => void }) {
  const current = source.version;
  const { data, error } = useLoad(() => api<Version>('GET', `${sourcePath(source.sourceId)}/versions/${number}`), [source.sourceId, number]);
  const lines = data ? diffLines(flatten(data), flatten(current)) : [];
  const title = `Version ${number} compared with the current version ${current.number}`;
  return (
    <section class="panel" aria-label={title}>
      <div class="src-title">
        <h3>{title}</h3>
        <button type="button" class="small" onClick={onClose}>Close</button>
      </div>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <>
          <p>
            {data.hash === current.hash
              ? `Same definition as now: the hashes of the name, description, type and settings are equal.`
              : `The definition (name, description, type or settings) differs from the current one; a rollback restores version ${number}'s.`}
          </p>
          <div class="diff src-diff" role="list" aria-label="Changed fields">
            {lines.map((l) => (
              <div key={`${l.kind}:${l.key}`} class={l.kind === 'same' ? 'src-same' : l.kind} role="listitem">
                <span aria-hidden="true">{SIGN[l.kind]} </span>
                <span class="src-sr">{l.kind === 'del' ? `version ${number}: ` : l.kind === 'add' ? 'current: ' : 'unchanged: '}</span>
                {l.key}: {l.value}
              </div>
            ))}
          </div>
          <p class="hint"><span class="del">− version {number}</span> <span class="add">+ current</span>. The API keeps a version's number, hash, description, time and author, not its old definition.</p>
        </>
      )}
    </section>
  );
}
