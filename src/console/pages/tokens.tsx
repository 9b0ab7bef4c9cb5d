/**
 * Tokens (GET /v2/storage/tokens): the list with permissions and expiry, a new scoped token
 * (token-create.tsx; its secret shown once), delete. Sinks' own tokens are listed but managed by
 * their sink (deleting one would stop its data), so they have no delete button here. Only a
 * token that may manage tokens gets the list; others see the API's answer.
 */
import './table-pages.css';
import { api } from '../api';
import { href } from '../router';
import { session } from '../session';
import { useLoad } from '../widgets/load';
import { ActionButton, CopyButton, ErrorText, Loading, Time } from '../widgets/common';
import { NewToken } from './token-create';
import type { Route } from '../router';
import type { TokenJson } from '../../contract/storage-tokens';

/** The token a sink creates for itself (src/definition/sink-lifecycle.ts): its source and sink. */
export function sinkOfToken(token: Pick<TokenJson, 'description'>): { sourceId: string; sinkId: string } | undefined {
  const m = /^\[_internal\] Stream Sink ([^/]+)\/(.+)$/.exec(token.description);
  return m ? { sourceId: m[1], sinkId: m[2] } : undefined;
}

export function TokensPage(_props: { route: Route }) {
  const { data, error, reload } = useLoad(() => api<TokenJson[]>('GET', '/v2/storage/tokens'), [], 10_000);
  const manage = session.canManageTokens();
  const me = session.info()?.id;
  return (
    <>
      <h1>Tokens</h1>
      {!manage && <p class="muted">This token cannot manage tokens; only the master token can.</p>}
      {manage && <NewToken onCreated={() => reload().catch(() => undefined)} />}
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <div class="scroll">
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Description</th><th scope="col">Id</th><th scope="col">Permissions</th>
                <th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {data.map((t) => {
                const sink = sinkOfToken(t);
                return (
                  <tr key={t.id}>
                    <td>
                      {t.description || <span class="muted">(no description)</span>}
                      {t.id === me && <> <span class="badge on">you</span></>}
                      {sink && <div class="muted">Managed by the sink <a href={href('sources', sink.sourceId, 'sinks', sink.sinkId)}>{sink.sourceId}/{sink.sinkId}</a></div>}
                    </td>
                    <td><code>{t.id}</code><CopyButton text={t.id} label={`id of token ${t.description || t.id}`} /></td>
                    <td><Permissions token={t} /></td>
                    <td><Time iso={t.created} /></td>
                    <td>
                      {t.expires ? <Time iso={t.expires} /> : <span class="muted">never</span>}
                      {t.isExpired && <> <span class="badge bad">expired</span></>}
                    </td>
                    <td>
                      {manage && !t.isMasterToken && !sink && t.id !== me && (
                        <ActionButton
                          class="small danger"
                          label={`Delete token ${t.description || t.id}`}
                          confirm={`Delete the token "${t.description || t.id}"? Whoever uses it is refused from now on.`}
                          onAction={async () => {
                            await api('DELETE', `/v2/storage/tokens/${encodeURIComponent(t.id)}`);
                            await reload();
                          }}
                        >
                          Delete
                        </ActionButton>
                      )}
                      {sink && <span class="muted">managed by its sink</span>}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function Permissions({ token }: { token: TokenJson }) {
  if (token.isMasterToken) return <span class="badge on">master token: everything</span>;
  const items: string[] = [];
  if (token.canManageBuckets) items.push('manage all buckets');
  else for (const [bucket, permission] of Object.entries(token.bucketPermissions)) items.push(`${bucket}: ${permission}`);
  if (token.canReadAllFileUploads) items.push('read all file uploads');
  if (token.canManageTokens) items.push('manage tokens');
  if (token.componentAccess?.length) items.push(`components: ${token.componentAccess.join(', ')}`);
  if (items.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="plain-list">
      {items.map((i) => <li key={i}>{i}</li>)}
    </ul>
  );
}
