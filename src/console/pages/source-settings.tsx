/**
 * The Settings tab of a source (GET .../settings): every key with its value, default, whether the
 * source overrides it, and for a token that may write, a change of the keys users may change
 * (PATCH .../settings answers a task; `null` resets a key). The sinks inherit these values
 * unless they override them (the sink editor shows and changes a sink's own). Asked with
 * `?all=true`, so that Sluice's own keys (the source's quota) are there to set.
 */
import { useState } from 'preact/hooks';
import { api, runTask } from '../api';
import { session } from '../session';
import { useLoad } from '../widgets/load';
import { ActionButton, ErrorText, Loading } from '../widgets/common';
import { sourcePath } from './source-model';
import type { SettingsAnswer, SettingsPatch, SettingView } from '../../contract/settings';

/** One key as GET .../settings answers it (the sink page's type). */
type Setting = SettingView;

export function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function SourceSettings({ sourceId }: { sourceId: string }) {
  const { data, error, reload } = useLoad(() => api<SettingsAnswer>('GET', `${sourcePath(sourceId)}/settings?all=true`), [sourceId], 5000);
  const [all, setAll] = useState(false);
  const canWrite = session.canWrite();
  const shown = data?.settings.filter((s) => all || !s.protected || s.overwritten) ?? [];
  const patch = async (key: string, value: unknown) => {
    await runTask('PATCH', `${sourcePath(sourceId)}/settings`, { json: { settings: [{ key, value }] } satisfies SettingsPatch });
    await reload();
  };
  return (
    <>
      <h2>Settings</h2>
      <p class="hint">
        A sink uses the default, then the source's value, then its own. Protected keys cannot be changed.
        The source's quota (source.quota.*: records and bytes a second on each node, 0 for none) is the source's only.
      </p>
      <label class="src-check">
        <input type="checkbox" checked={all} onChange={(e) => setAll((e.target as HTMLInputElement).checked)} />
        Show the protected keys too
      </label>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <div class="scroll">
          <table class="list src-settings" aria-label="Settings">
            <thead>
              <tr>
                <th scope="col">Key</th><th scope="col">Value</th><th scope="col">Default</th><th scope="col">Overridden</th><th scope="col">Type</th>
                {canWrite && <th scope="col">Change</th>}
              </tr>
            </thead>
            <tbody>
              {shown.map((s) => (
                <tr key={s.key}>
                  <td>
                    <code class="src-key">{s.key}</code>
                    <div class="hint">{s.description}{s.validation ? ` (${s.validation})` : ''}</div>
                  </td>
                  <td><code>{show(s.value)}</code></td>
                  <td><code>{show(s.defaultValue)}</code></td>
                  <td>{s.overwritten ? <span class="badge on">overridden</span> : <span class="muted">default</span>}</td>
                  <td>{s.type}{s.protected && <div class="muted">protected</div>}</td>
                  {canWrite && (
                    <td>{!s.protected && <SettingEditor key={s.key} setting={s} onSave={(v) => patch(s.key, v)} />}</td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** The value as the API takes it: a number for int/float keys, a boolean for bool keys. */
function parse(type: string, raw: string): unknown {
  if (type === 'bool') return raw === 'true';
  if (type === 'int' || type === 'float') {
    const n = Number(raw);
    return raw.trim() !== '' && Number.isFinite(n) ? n : raw;
  }
  return raw;
}

function SettingEditor({ setting, onSave }: { setting: Setting; onSave: (value: unknown) => Promise<void> }) {
  const [draft, setDraft] = useState(show(setting.value));
  const label = `New value of ${setting.key}`;
  return (
    <div class="src-editor">
      {setting.type === 'bool' ? (
        <select aria-label={label} value={draft} onChange={(e) => setDraft((e.target as HTMLSelectElement).value)}>
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      ) : (
        <input aria-label={label} value={draft} inputMode={setting.type === 'int' || setting.type === 'float' ? 'numeric' : undefined}
          onInput={(e) => setDraft((e.target as HTMLInputElement).value)} />
      )}
      <ActionButton class="small" label={`Save ${setting.key}`} onAction={() => onSave(parse(setting.type, draft))}>Save</ActionButton>
      {setting.overwritten && (
        <ActionButton class="small" label={`Reset ${setting.key} to its default`}
          onAction={async () => { await onSave(null); setDraft(show(setting.defaultValue)); }}>
          Reset
        </ActionButton>
      )}
    </div>
  );
}
