/**
 * The runnable components, by Storage component id. Each entry loads its module lazily: the API
 * process only needs the ids (to answer "not runnable" at job creation); the module itself is
 * imported inside the worker process that runs the job (src/queue/component-child.ts).
 */
import type { Component } from './contract.js';

export interface ComponentModule {
  component: Component;
}

export interface ComponentEntry {
  id: string;
  name: string;
  type: 'extractor' | 'writer' | 'application' | 'other';
  load: () => Promise<ComponentModule>;
}

const RUNNABLE: ComponentEntry[] = [
  {
    id: 'sluice.echo',
    name: 'Echo (writes its parameters into a table)',
    type: 'application',
    load: () => import('./echo/index.js'),
  },
  {
    id: 'keboola.ex-generic-v2',
    name: 'Generic Extractor',
    type: 'extractor',
    load: () => import('./generic-extractor/index.js'),
  },
];

/** Components that hold configurations but do not run (variables). */
const KNOWN: Record<string, { name: string; type: ComponentEntry['type'] }> = {
  'keboola.variables': { name: 'Variables', type: 'other' },
  'keboola.shared-code': { name: 'Shared Code', type: 'other' },
};

/** The ids of the components jobs can run. */
export function runnableComponentIds(): string[] {
  return RUNNABLE.map((c) => c.id);
}

export function runnableComponent(id: string): ComponentEntry | undefined {
  return RUNNABLE.find((c) => c.id === id);
}

/** Name and type for the components list; unknown ids are shown as they are. */
export function describeComponent(id: string): { name: string; type: ComponentEntry['type'] } {
  const entry = runnableComponent(id);
  if (entry) return { name: entry.name, type: entry.type };
  return KNOWN[id] ?? { name: id, type: 'other' };
}
