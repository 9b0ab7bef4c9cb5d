/** Tokens: to be built. */
import type { Route } from '../router';

export function TokensPage(_props: { route: Route }) {
  return <h1>Tokens</h1>;
}
