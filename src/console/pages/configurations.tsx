/** Configurations: to be built. */
import type { Route } from '../router';

export function ConfigurationsPage(_props: { route: Route }) {
  return <h1>Configurations</h1>;
}
