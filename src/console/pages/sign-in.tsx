/** Sign-in with a Storage API token (kept in this tab's sessionStorage only). */
import { useState } from 'preact/hooks';
import { session } from '../session';
import { ErrorText } from '../widgets/common';

export function SignIn() {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(session.endMessage());
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await session.start(token.trim());
      if (!location.hash || location.hash === '#/') location.hash = '#/sources';
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>Sign in to Sluice</h1>
      <form class="stack" onSubmit={submit}>
        <label class="field">
          Storage API token
          <span class="hint">The master token is in <code>data/master-token</code> of the server. It stays in this tab only.</span>
          <input type="password" name="token" autoComplete="off" required value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        </label>
        <ErrorText error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || token.trim() === ''}>Sign in</button>
        </div>
      </form>
    </main>
  );
}
