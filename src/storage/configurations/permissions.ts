import type { Token } from '../token-model.js';

/**
 * Who may use the configuration API: the master token and tokens with
 * canManageBuckets see and change every component's configurations; a token with
 * componentAccess only those components'; any other token nothing (403 even on listing).
 * A token of a read-only user may read but not change anything.
 */
export function canReadComponent(token: Token, componentId: string): boolean {
  if (token.isMasterToken || token.canManageBuckets) return true;
  return token.componentAccess?.includes(componentId) ?? false;
}

export function canWriteComponent(token: Token, componentId: string): boolean {
  return canReadComponent(token, componentId) && !isReadOnly(token);
}

/** Whether the token may use the configuration API at all (list routes). */
export function canUseConfigurations(token: Token): boolean {
  return token.isMasterToken || token.canManageBuckets || (token.componentAccess?.length ?? 0) > 0;
}

function isReadOnly(token: Token): boolean {
  return token.admin?.role === 'readOnly';
}
