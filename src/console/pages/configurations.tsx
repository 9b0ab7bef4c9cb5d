/**
 * Configurations: the components with their configurations (GET /v2/storage/components); one
 * configuration in configuration-detail.tsx.
 * Routes: #/configurations, #/configurations/<componentId>/<configId>.
 */
import './table-pages.css';
import type { Route } from '../router';
import { href } from '../router';
import { api } from '../api';
import { useLoad } from '../widgets/load';
import { CopyButton, ErrorText, Loading, Time } from '../widgets/common';
import { ConfigurationPage } from './configuration-detail';
import type { ComponentJson } from '../../contract/storage-configurations';

export function ConfigurationsPage({ route }: { route: Route }) {
  const [, componentId, configId] = route.parts;
  if (componentId !== undefined && configId !== undefined) return <ConfigurationPage componentId={componentId} configId={configId} />;
  return <ConfigurationList />;
}

function ConfigurationList() {
  const { data, error } = useLoad(() => api<ComponentJson[]>('GET', '/v2/storage/components'), [], 10_000);
  return (
    <>
      <h1>Configurations</h1>
      <p class="muted">Component configurations; jobs run them. Create and change them with the Storage API (<code>/v2/storage/components/…/configs</code>).</p>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && data.length === 0 && <p class="muted">No configurations yet.</p>}
      {data?.map((component) => (
        <section key={component.id} class="panel" aria-labelledby={`component-${component.id}`}>
          <h2 id={`component-${component.id}`}>
            {component.name} <code class="muted">{component.id}</code> <span class="badge">{component.type}</span>
          </h2>
          <div class="scroll">
            <table class="list">
              <thead>
                <tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Version</th><th scope="col">Last change</th><th scope="col">State</th></tr>
              </thead>
              <tbody>
                {component.configurations.map((c) => (
                  <tr key={c.id}>
                    <td>
                      <a href={href('configurations', component.id, c.id)}>{c.name}</a>
                      {c.description && <div class="muted">{c.description}</div>}
                    </td>
                    <td><code>{c.id}</code><CopyButton text={c.id} label={`id of ${c.name}`} /></td>
                    <td>{c.version}</td>
                    <td><Time iso={c.currentVersion.created} /> <span class="muted">{c.currentVersion.changeDescription}</span></td>
                    <td>{c.isDisabled ? <span class="badge off">disabled</span> : <span class="badge on">enabled</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      ))}
    </>
  );
}
