/**
 * A new scoped token (POST /v2/storage/tokens): description, a permission per bucket,
 * canManageBuckets, canReadAllFileUploads and an expiry. The answer holds the secret, shown here
 * once in a copyable field and kept nowhere else.
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { useLoad } from '../widgets/load';
import { CopyButton, ErrorText, Field } from '../widgets/common';
import type { BucketJson as Bucket } from '../../contract/storage-tables';

const UNITS: Record<string, number> = { minutes: 60, hours: 3600, days: 86_400 };

export function NewToken({ onCreated }: { onCreated: () => void }) {
  const buckets = useLoad(() => api<Bucket[]>('GET', '/v2/storage/buckets'), []);
  const [description, setDescription] = useState('');
  const [permissions, setPermissions] = useState<Record<string, string>>({});
  const [manageBuckets, setManageBuckets] = useState(false);
  const [readFiles, setReadFiles] = useState(false);
  const [expiresAmount, setExpiresAmount] = useState('');
  const [expiresUnit, setExpiresUnit] = useState('days');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<{ description: string; token: string } | undefined>(undefined);
  const [open, setOpen] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const bucketPermissions = Object.fromEntries(Object.entries(permissions).filter(([, p]) => p === 'read' || p === 'write'));
      const amount = expiresAmount.trim() === '' ? undefined : Number(expiresAmount);
      if (amount !== undefined && !(Number.isInteger(amount) && amount > 0)) throw new Error('The expiry must be a whole number above 0, or empty for never.');
      const answer = await api<{ token: string; description: string }>('POST', '/v2/storage/tokens', {
        json: {
          description,
          bucketPermissions,
          canManageBuckets: manageBuckets,
          canReadAllFileUploads: readFiles,
          expiresIn: amount === undefined ? null : amount * UNITS[expiresUnit],
        },
      });
      setCreated({ description: answer.description, token: answer.token });
      setDescription('');
      setPermissions({});
      setManageBuckets(false);
      setReadFiles(false);
      setExpiresAmount('');
      setOpen(false);
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      {created && (
        <div class="token-once" role="region" aria-label="New token">
          <p><strong>Token “{created.description}” created.</strong> Copy it now: <strong>it is not shown again</strong> (only its hash is kept).</p>
          <div class="inline">
            <label class="sr-only" for="new-token-secret">New token</label>
            <input id="new-token-secret" readOnly value={created.token} style={{ flex: '1 1 20rem' }} onFocus={(e) => (e.target as HTMLInputElement).select()} />
            <CopyButton text={created.token} label="new token" />
            <button type="button" class="small" onClick={() => setCreated(undefined)}>I have copied it</button>
          </div>
        </div>
      )}
      <details class="panel" open={open} onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
        <summary>New token</summary>
        <form class="stack" onSubmit={submit}>
          <Field label="Description">
            <input name="description" value={description} maxLength={1000} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
          </Field>
          <fieldset class="plain">
            <legend>Bucket permissions</legend>
            <ErrorText error={buckets.error} />
            {buckets.data && buckets.data.length === 0 && <p class="muted">No buckets yet.</p>}
            {buckets.data && buckets.data.length > 0 && (
              <div class="scroll">
                <table class="list">
                  <thead><tr><th scope="col">Bucket</th><th scope="col">Permission</th></tr></thead>
                  <tbody>
                    {buckets.data.map((b) => (
                      <tr key={b.id}>
                        <td><label for={`perm-${b.id}`}><code>{b.id}</code></label></td>
                        <td>
                          <select
                            id={`perm-${b.id}`}
                            disabled={manageBuckets}
                            value={permissions[b.id] ?? ''}
                            onChange={(e) => setPermissions({ ...permissions, [b.id]: (e.target as HTMLSelectElement).value })}
                          >
                            <option value="">none</option>
                            <option value="read">read</option>
                            <option value="write">write</option>
                          </select>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </fieldset>
          <div class="checks">
            <label>
              <input type="checkbox" checked={manageBuckets} onChange={(e) => setManageBuckets((e.target as HTMLInputElement).checked)} />
              Manage all buckets (canManageBuckets: every bucket, and configurations)
            </label>
            <label>
              <input type="checkbox" checked={readFiles} onChange={(e) => setReadFiles((e.target as HTMLInputElement).checked)} />
              Read all file uploads (canReadAllFileUploads)
            </label>
          </div>
          <fieldset class="plain">
            <legend>Expires in</legend>
            <div class="inline">
              <input
                type="number"
                min="1"
                inputMode="numeric"
                aria-label="Expires in"
                placeholder="never"
                value={expiresAmount}
                style={{ width: '8rem' }}
                onInput={(e) => setExpiresAmount((e.target as HTMLInputElement).value)}
              />
              <select aria-label="Expiry unit" value={expiresUnit} onChange={(e) => setExpiresUnit((e.target as HTMLSelectElement).value)}>
                {Object.keys(UNITS).map((u) => <option key={u} value={u}>{u}</option>)}
              </select>
              <span class="hint">Empty: the token never expires.</span>
            </div>
          </fieldset>
          <ErrorText error={error} />
          <div class="actions"><button type="submit" class="primary" disabled={busy}>Create token</button></div>
        </form>
      </details>
    </>
  );
}
