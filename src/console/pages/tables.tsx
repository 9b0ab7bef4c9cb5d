/** Tables: to be built. */
import type { Route } from '../router';

export function TablesPage(_props: { route: Route }) {
  return <h1>Tables</h1>;
}
