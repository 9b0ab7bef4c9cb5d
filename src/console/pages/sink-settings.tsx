/**
 * A sink's settings (GET/PATCH .../sinks/<id>/settings): every key with its effective value,
 * default, where the value comes from (the sink's own override, the source's, or the default;
 * the sink's answer says `overwritten` for its own, the source's answer for the source's), its
 * type and bounds (the `validation` rule of src/pipeline/settings.ts) as a hint. Users may
 * change the keys that are not `protected`; a change or a reset (`null`) is a task, and the
 * API's validation message is shown next to the setting.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, runTask, BRANCH } from '../api';
import { session } from '../session';
import { useLoad } from '../widgets/load';
import { ErrorText, Loading } from '../widgets/common';
import type { SettingsAnswer, SettingsPatch, SettingView } from '../../contract/settings';

/** Where a key's effective value comes from. */
type SettingLevel = 'sink' | 'source' | 'default';

interface Row extends SettingView {
  effective: unknown;
  level: SettingLevel;
}

function show(value: unknown): string {
  if (value === undefined || value === null) return '—';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** What kind of value a key takes, from its type and rule (the API's own words are in `validation`). */
function unitOf(s: SettingView): 'bytes' | 'duration' | undefined {
  if (s.type !== 'string') return undefined;
  if (/Bytes=/.test(s.validation ?? '') || /^\d+(\.\d+)?[kKmMgG]?B$/.test(String(s.defaultValue))) return 'bytes';
  if (/Duration=/.test(s.validation ?? '') || /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/.test(String(s.defaultValue))) return 'duration';
  return undefined;
}

/** "required,minDuration=1s,maxDuration=30m" -> "a duration (e.g. 30s, 1m30s) from 1s to 30m; required". */
export function boundsHint(s: SettingView): string {
  const rule: Record<string, string> = {};
  for (const part of (s.validation ?? '').split(',').filter(Boolean)) {
    const [name, arg = ''] = part.split('=');
    rule[name] = arg;
  }
  const unit = unitOf(s);
  const kind = s.type === 'bool' ? 'true or false'
    : s.type === 'int' ? 'a whole number'
    : s.type === 'float' ? 'a number'
    : s.type.startsWith('[]') ? 'a list'
    : unit === 'bytes' ? 'a size (e.g. 512KB, 5MB)'
    : unit === 'duration' ? 'a duration (e.g. 500ms, 30s, 1m30s)'
    : 'text';
  const min = rule.min ?? rule.minBytes ?? rule.minDuration;
  const max = rule.max ?? rule.maxBytes ?? rule.maxDuration;
  let range = '';
  if (s.type.startsWith('[]') && rule.min !== undefined) range = ` of at least ${rule.min} item(s)`;
  else if (min !== undefined && max !== undefined) range = ` from ${min} to ${max}`;
  else if (min !== undefined) range = `, at least ${min}`;
  else if (max !== undefined) range = `, at most ${max}`;
  const oneOf = rule.oneof !== undefined ? `: one of ${rule.oneof.split(' ').join(', ')}` : '';
  return `${kind}${range}${oneOf}${'required' in rule ? '; required' : ''}`;
}

/** The input's text as the JSON value the API expects for the key's type (left as text when it is not one: the API says why). */
function parseInput(s: SettingView, text: string): unknown {
  const t = text.trim();
  if (s.type === 'int' && /^-?\d+$/.test(t)) return Number(t);
  if (s.type === 'float' && t !== '' && !Number.isNaN(Number(t))) return Number(t);
  if (s.type.startsWith('[]')) {
    try {
      return JSON.parse(t);
    } catch {
      return t;
    }
  }
  return text;
}

export function SinkSettings({ sourceId, sinkId }: { sourceId: string; sinkId: string }) {
  const base = `${BRANCH}/sources/${encodeURIComponent(sourceId)}`;
  const { data, error, reload } = useLoad(async () => {
    const [sink, source] = await Promise.all([
      api<SettingsAnswer>('GET', `${base}/sinks/${encodeURIComponent(sinkId)}/settings`),
      api<SettingsAnswer>('GET', `${base}/settings`),
    ]);
    const fromSource = new Map(source.settings.filter((s) => s.overwritten).map((s) => [s.key, s.value]));
    return sink.settings.map((s): Row => {
      if (s.overwritten) return { ...s, effective: s.value, level: 'sink' };
      if (fromSource.has(s.key)) return { ...s, effective: fromSource.get(s.key), level: 'source' };
      return { ...s, effective: s.defaultValue, level: 'default' };
    });
  }, [sourceId, sinkId]);
  const [showProtected, setShowProtected] = useState(false);

  if (!data) return error ? <ErrorText error={error} /> : <Loading />;
  const editable = data.filter((s) => !s.protected);
  const fixed = data.filter((s) => s.protected);
  return (
    <div class="settings">
      <p class="hint">
        The effective value is the default, then the source's override, then the sink's. Changing the upload or import
        triggers closes the sink's current file at once (its data is imported now); the new values apply to the next one.
      </p>
      <ErrorText error={error} />
      <div class="scroll">
        <table class="list settings-table" aria-label="Settings you may change">
          <thead>
            <tr>
              <th scope="col">Setting</th><th scope="col">Value</th><th scope="col">Default</th><th scope="col">Set at</th>
              {session.canWrite() && <th scope="col"><span class="visually-hidden">Actions</span></th>}
            </tr>
          </thead>
          <tbody>
            {editable.map((s) => <SettingRow key={s.key} row={s} path={`${base}/sinks/${encodeURIComponent(sinkId)}/settings`} onSaved={reload} />)}
          </tbody>
        </table>
      </div>
      <div class="actions">
        <button type="button" class="small" aria-expanded={showProtected} onClick={() => setShowProtected(!showProtected)}>
          {showProtected ? 'Hide' : 'Show'} the {fixed.length} protected settings
        </button>
      </div>
      {showProtected && (
        <div class="scroll">
          <table class="list settings-table" aria-label="Protected settings">
            <thead>
              <tr><th scope="col">Setting</th><th scope="col">Value</th><th scope="col">Default</th><th scope="col">Set at</th></tr>
            </thead>
            <tbody>
              {fixed.map((s) => (
                <tr key={s.key}>
                  <td><SettingName row={s} /></td>
                  <td data-label="Value"><code>{show(s.effective)}</code></td>
                  <td data-label="Default"><code>{show(s.defaultValue)}</code></td>
                  <td data-label="Set at"><LevelBadge level={s.level} /> <span class="badge" title="Users may not change this key">protected</span></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

function SettingName({ row }: { row: Row }) {
  return (
    <>
      <code class="key">{row.key}</code>
      <div class="hint">{row.description}</div>
      <div class="hint">Takes {boundsHint(row)}.</div>
    </>
  );
}

function LevelBadge({ level }: { level: SettingLevel }) {
  if (level === 'sink') return <span class="badge on" title="The sink's own value">overridden (sink)</span>;
  if (level === 'source') return <span class="badge" title="The source's value (the sink has none of its own)">overridden (source)</span>;
  return <span class="muted">default</span>;
}

function SettingRow({ row, path, onSaved }: { row: Row; path: string; onSaved: () => Promise<void> }) {
  const canWrite = session.canWrite();
  const [text, setText] = useState(show(row.effective));
  const [checked, setChecked] = useState(row.effective === true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const inputId = `setting-${row.key.replace(/\W/g, '-')}`;

  const patch = async (value: unknown, doneText: string) => {
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      await runTask('PATCH', path, { json: { settings: [{ key: row.key, value }] } satisfies SettingsPatch });
      await onSaved();
      setDone(doneText);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const save = (event: Event) => {
    event.preventDefault();
    void patch(row.type === 'bool' ? checked : parseInput(row, text), 'Saved.');
  };
  const reset = async () => {
    await patch(null, 'Reset.');
  };
  // A reset or a reload shows the new effective value in the field.
  const shown = show(row.effective);
  useEffect(() => {
    setText(shown);
    setChecked(row.effective === true);
  }, [shown]);

  return (
    <tr class={row.level === 'sink' ? 'overridden' : undefined}>
      <td><SettingName row={row} /></td>
      <td data-label="Value">
        {!canWrite ? <code>{shown}</code> : (
          <form id={`${inputId}-form`} onSubmit={save} class="setting-value">
            {row.type === 'bool' ? (
              <label class="check">
                <input id={inputId} type="checkbox" checked={checked} onChange={(e) => setChecked((e.target as HTMLInputElement).checked)} />
                <span class="visually-hidden">Value of {row.key}</span>
                {checked ? 'true' : 'false'}
              </label>
            ) : (
              <input id={inputId} value={text} aria-label={`Value of ${row.key}`} inputMode={row.type === 'int' ? 'numeric' : undefined}
                autoComplete="off" spellcheck={false} aria-invalid={error ? true : undefined} aria-describedby={error ? `${inputId}-error` : undefined}
                onInput={(e) => setText((e.target as HTMLInputElement).value)} />
            )}
          </form>
        )}
        <ErrorText error={error} id={`${inputId}-error`} />
        {done && <span class="ok" role="status">{done}</span>}
      </td>
      <td data-label="Default"><code>{show(row.defaultValue)}</code></td>
      <td data-label="Set at"><LevelBadge level={row.level} /></td>
      {canWrite && (
        <td class="setting-actions">
          <button type="submit" form={`${inputId}-form`} class="small primary" disabled={busy} aria-label={`Save ${row.key}`}>Save</button>
          {row.level === 'sink' && (
            <button type="button" class="small" disabled={busy} onClick={reset} aria-label={`Reset ${row.key}`}
              title="Remove the sink's own value: the source's value or the default applies">Reset</button>
          )}
        </td>
      )}
    </tr>
  );
}
