/**
 * The compose files under docker/: the single node (compose.yaml) and the cluster of Kafka,
 * PostgreSQL and two Sluice nodes that share no disk (compose.cluster.yaml). Where a `docker` client with the
 * compose plugin exists, `docker compose config` validates the files; everywhere, the files are
 * parsed (js-yaml, with compose's variable interpolation) and checked against the Dockerfile and
 * src/config.ts: build paths, SLUICE_* variables, ports, volumes, the role split, Kafka's health.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { loadConfig, OPTIONS, type Config } from '../../src/config.js';
import { stagingSlicePath } from '../../src/model/levels.js';

// js-yaml is the YAML parser among the direct dependencies; it ships no types (packages/jsonnet/src/builtins.ts loads it the same way).
const yaml = createRequire(import.meta.url)('js-yaml') as { load(text: string): unknown };

const SINGLE = resolve('docker/compose.yaml');
const CLUSTER = resolve('docker/compose.cluster.yaml');
const OBSERVABILITY = resolve('docker/compose.observability.yaml');
const DOCKERFILE = resolve('docker/Dockerfile');
const NODES = ['sluice-1', 'sluice-2'];
const ALL_ROLES = ['api', 'ingest', 'sink', 'import', 'jobs'];
/** The cluster file requires the master token and the encryption key from the environment (`${SLUICE_MASTER_TOKEN:?...}`). */
const TOKEN_ENV = { SLUICE_MASTER_TOKEN: 'compose-test-token', SLUICE_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64') };
const EXPECTED_SERVICES: [string, string[]][] = [
  [SINGLE, ['sluice']],
  [CLUSTER, ['kafka', 'postgres', 'sluice-1', 'sluice-2']],
  [OBSERVABILITY, ['grafana', 'prometheus', 'sluice']],
];

/** `docker compose` usable here? (A docker client without the compose plugin counts as absent.) */
const composeCli = ((): boolean => {
  const r = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8', timeout: 20_000 });
  return !r.error && r.status === 0;
})();

interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  ports?: unknown[];
  environment?: Record<string, unknown> | string[];
  volumes?: unknown[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  [key: string]: unknown;
}
interface ComposeFile {
  name?: string;
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Compose's interpolation: $$, $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}. */
function interpolate(value: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\$|\$\{([A-Za-z_]\w*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_]\w*)/g, (whole, name?: string, op?: string, arg?: string, bare?: string) => {
      if (whole === '$$') return '$';
      const key = (name ?? bare)!;
      const v = env[key];
      const missing = op?.startsWith(':') ? v === undefined || v === '' : v === undefined;
      if (op?.endsWith('?') && missing) throw new Error(`required variable ${key} is missing a value: ${arg}`);
      if (op?.endsWith('-') && missing) return arg ?? '';
      return v ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  return value;
}

function loadCompose(file: string, env: Record<string, string | undefined>): ComposeFile {
  const doc = yaml.load(readFileSync(file, 'utf8'));
  expect(doc, `${file} is a YAML mapping`).toBeTypeOf('object');
  const compose = interpolate(doc, env) as ComposeFile;
  expect(compose.services, `${file} has services`).toBeTypeOf('object');
  return compose;
}

function environment(s: Service): Record<string, string> {
  const env = s.environment ?? {};
  if (Array.isArray(env)) return Object.fromEntries(env.map((e) => (e.includes('=') ? [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] : [e, ''])));
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]));
}

/** ENV of the Dockerfile's final stage (`ENV K=V K2=V2` or `ENV K V`). */
function dockerfileEnv(): Record<string, string> {
  const stages = readFileSync(DOCKERFILE, 'utf8').split(/^FROM\s/m);
  const env: Record<string, string> = {};
  for (const line of stages[stages.length - 1].split('\n')) {
    const m = /^ENV\s+(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[1].includes('=')) for (const pair of m[1].split(/\s+/)) env[pair.slice(0, pair.indexOf('='))] = pair.slice(pair.indexOf('=') + 1);
    else env[m[1].split(/\s+/)[0]] = m[1].split(/\s+/).slice(1).join(' ');
  }
  return env;
}

interface Port {
  hostIp?: string;
  published?: number;
  target: number;
}
function ports(s: Service): Port[] {
  return (s.ports ?? []).map((p) => {
    if (typeof p === 'number') return { target: p };
    if (typeof p === 'string') {
      const parts = p.replace(/\/(tcp|udp)$/, '').split(':');
      const target = Number(parts[parts.length - 1]);
      if (parts.length === 1) return { target };
      return { hostIp: parts.length === 3 ? parts[0] : undefined, published: Number(parts[parts.length - 2]), target };
    }
    const long = p as { target: number | string; published?: number | string; host_ip?: string };
    return { hostIp: long.host_ip, published: long.published === undefined ? undefined : Number(long.published), target: Number(long.target) };
  });
}

interface Mount {
  source?: string;
  target: string;
  named: boolean;
  readOnly: boolean;
}
function mounts(s: Service): Mount[] {
  return (s.volumes ?? []).map((v) => {
    if (typeof v === 'string') {
      const [source, target, mode] = v.split(':');
      if (target === undefined) return { target: source, named: false, readOnly: false };
      return { source, target, named: !/^[./~]/.test(source), readOnly: (mode ?? '').split(',').includes('ro') };
    }
    const long = v as { type?: string; source?: string; target: string; read_only?: boolean };
    return { source: long.source, target: long.target, named: (long.type ?? 'volume') === 'volume' && long.source !== undefined, readOnly: long.read_only === true };
  });
}

function dependsOn(s: Service): Record<string, string> {
  const d = s.depends_on ?? [];
  if (Array.isArray(d)) return Object.fromEntries(d.map((name) => [name, 'service_started']));
  return Object.fromEntries(Object.entries(d).map(([name, v]) => [name, v?.condition ?? 'service_started']));
}

/** The configuration a Sluice service's container gets: the Dockerfile's ENV overridden by the service's environment. */
function nodeConfig(s: Service): Config {
  return loadConfig([], { ...dockerfileEnv(), ...environment(s) });
}

/** The staging level's folder under the data dir, as the code names it. */
const STAGING_DIR = stagingSlicePath({ branchId: 1, sourceId: 'source', sinkId: 'sink', fileOpenedAt: '2024-01-01T00:00:00.000Z', openedAt: '2024-01-01T00:00:00.000Z' }).split(sep)[0];

function sluiceServices(compose: ComposeFile): [string, Service][] {
  return Object.entries(compose.services).filter(([, s]) => s.build !== undefined);
}

describe('docker compose files', () => {
  const single = loadCompose(SINGLE, TOKEN_ENV);
  const cluster = loadCompose(CLUSTER, TOKEN_ENV);
  const observability = loadCompose(OBSERVABILITY, TOKEN_ENV);
  const files: [string, ComposeFile][] = [
    [SINGLE, single],
    [CLUSTER, cluster],
    [OBSERVABILITY, observability],
  ];

  it(`are valid compose files naming the expected services (${composeCli ? 'docker compose config' : 'parsed: no docker compose here'})`, () => {
    for (const [file, expected] of EXPECTED_SERVICES) {
      if (composeCli) {
        const env: NodeJS.ProcessEnv = { ...process.env, ...TOKEN_ENV };
        const r = spawnSync('docker', ['compose', '-f', file, 'config', '--format', 'json'], { encoding: 'utf8', env, timeout: 60_000 });
        expect(r.status, `docker compose -f ${file} config: ${r.stderr}`).toBe(0);
        const config = JSON.parse(r.stdout) as ComposeFile;
        expect(Object.keys(config.services).sort()).toEqual(expected);
        if (file === CLUSTER) {
          expect(NODES.map((n) => environment(config.services[n]).SLUICE_MASTER_TOKEN)).toEqual([TOKEN_ENV.SLUICE_MASTER_TOKEN, TOKEN_ENV.SLUICE_MASTER_TOKEN]);
          expect(NODES.map((n) => environment(config.services[n]).SLUICE_ENCRYPTION_KEY)).toEqual([TOKEN_ENV.SLUICE_ENCRYPTION_KEY, TOKEN_ENV.SLUICE_ENCRYPTION_KEY]);
          delete env.SLUICE_MASTER_TOKEN;
          const refused = spawnSync('docker', ['compose', '-f', file, 'config'], { encoding: 'utf8', env, timeout: 60_000 });
          expect(refused.status, 'the cluster file needs SLUICE_MASTER_TOKEN').not.toBe(0);
          expect(refused.stderr).toContain('SLUICE_MASTER_TOKEN');
        }
      } else {
        const compose = loadCompose(file, TOKEN_ENV);
        expect(Object.keys(compose.services).sort()).toEqual(expected);
        for (const key of Object.keys(compose)) expect(['name', 'services', 'volumes', 'networks', 'configs', 'secrets'], `top-level key "${key}" in ${file}`).toContain(key);
        for (const [name, s] of Object.entries(compose.services)) {
          expect(s.image !== undefined || s.build !== undefined, `${name} has an image or a build`).toBe(true);
          for (const key of Object.keys(s)) expect(['image', 'build', 'hostname', 'ports', 'environment', 'volumes', 'depends_on', 'healthcheck', 'command', 'restart'], `key "${key}" of service ${name}`).toContain(key);
          for (const [v, value] of Object.entries(environment(s))) expect(typeof value, `${name}: ${v}`).toBe('string');
        }
        for (const volume of Object.keys(compose.volumes ?? {})) expect(volume).toMatch(/^[a-z0-9][a-z0-9_.-]*$/);
        if (compose.name !== undefined) expect(compose.name).toMatch(/^[a-z0-9][a-z0-9_-]*$/);
        if (file === CLUSTER) {
          expect(NODES.map((n) => environment(compose.services[n]).SLUICE_MASTER_TOKEN)).toEqual([TOKEN_ENV.SLUICE_MASTER_TOKEN, TOKEN_ENV.SLUICE_MASTER_TOKEN]);
          expect(() => loadCompose(file, {}), 'the cluster file needs SLUICE_MASTER_TOKEN').toThrow(/SLUICE_MASTER_TOKEN/);
          expect(NODES.map((n) => environment(compose.services[n]).SLUICE_ENCRYPTION_KEY)).toEqual([TOKEN_ENV.SLUICE_ENCRYPTION_KEY, TOKEN_ENV.SLUICE_ENCRYPTION_KEY]);
          expect(() => loadCompose(file, { SLUICE_MASTER_TOKEN: 'x' }), 'the cluster file needs SLUICE_ENCRYPTION_KEY').toThrow(/SLUICE_ENCRYPTION_KEY/);
        }
      }
    }
    // Both files live in docker/; distinct project names keep `up` of one from touching the other.
    expect(cluster.name).toBeDefined();
    expect(cluster.name).not.toBe(single.name ?? 'docker');
  });

  it('build every Sluice service from an existing Dockerfile', () => {
    for (const [file, compose] of files) {
      const built = sluiceServices(compose);
      expect(built.length, `${file} builds Sluice`).toBeGreaterThan(0);
      for (const [name, s] of built) {
        const build = typeof s.build === 'string' ? { context: s.build } : s.build!;
        const context = resolve(dirname(file), build.context ?? '.');
        const dockerfile = resolve(context, build.dockerfile ?? 'Dockerfile');
        expect(existsSync(dockerfile), `${name} in ${file}: ${dockerfile}`).toBe(true);
        expect(dockerfile).toBe(DOCKERFILE);
        // The Dockerfile copies package.json, src and bin from the context: the project root.
        for (const f of ['package.json', 'package-lock.json', 'src', 'bin']) expect(existsSync(join(context, f)), `${relative('.', context) || '.'}/${f}`).toBe(true);
      }
    }
  });

  it('use only SLUICE_* variables of src/config.ts OPTIONS, with values the config accepts', () => {
    const known = OPTIONS.map((o) => o.env);
    const used: [string, string][] = Object.keys(dockerfileEnv()).map((v) => ['docker/Dockerfile', v]);
    for (const [file, compose] of files) {
      for (const [name, s] of Object.entries(compose.services)) for (const v of Object.keys(environment(s))) used.push([`${name} in ${file}`, v]);
    }
    const sluiceVars = used.filter(([, v]) => v.startsWith('SLUICE_'));
    expect(sluiceVars.length).toBeGreaterThan(0);
    for (const [where, v] of sluiceVars) expect(known, `${where}: ${v} is not an env var of OPTIONS in src/config.ts`).toContain(v);
    for (const [, compose] of files) for (const [, s] of sluiceServices(compose)) expect(() => nodeConfig(s)).not.toThrow();
    expect(nodeConfig(single.services.sluice).kafkaBrokers, 'the single node keeps the embedded log').toBeUndefined();
  });

  it('publish distinct host ports, each to the port the node listens on', () => {
    const published: string[] = [];
    for (const [file, compose] of files) {
      for (const [name, s] of Object.entries(compose.services)) {
        for (const p of ports(s)) {
          expect(Number.isInteger(p.target), `${name} in ${file}: container port`).toBe(true);
          if (p.published !== undefined) published.push(`${p.published} (${name} in ${file})`);
        }
      }
      for (const [name, s] of sluiceServices(compose)) {
        const config = nodeConfig(s);
        const mapped = ports(s);
        expect(mapped.length, `${name} publishes its port`).toBe(1);
        expect(mapped[0].target, `${name} listens on ${config.port}`).toBe(config.port);
        expect(new URL(config.publicApiUrl).port, `${name}: public API URL on the published port`).toBe(String(mapped[0].published));
        expect(new URL(config.publicIngestUrl).port, `${name}: public ingest URL on the published port`).toBe(String(mapped[0].published));
      }
    }
    const numbers = published.map((p) => p.split(' ')[0]);
    expect(new Set(numbers).size, `host ports collide: ${published.join(', ')}`).toBe(numbers.length);
  });

  it('run the nodes on a healthy single KRaft broker at kafka:9092', () => {
    const kafka = cluster.services.kafka;
    expect(kafka.image).toMatch(/^apache\/kafka:3\.9\./);
    const kenv = environment(kafka);
    expect(kenv.KAFKA_PROCESS_ROLES.split(',').sort()).toEqual(['broker', 'controller']);
    expect(kenv.KAFKA_CONTROLLER_QUORUM_VOTERS).toBe(`${kenv.KAFKA_NODE_ID}@kafka:9093`);
    expect(Buffer.from(kenv.CLUSTER_ID, 'base64url').length, 'CLUSTER_ID is a base64url UUID').toBe(16);
    const advertised = kenv.KAFKA_ADVERTISED_LISTENERS.split(',').map((l) => l.replace(/^\w+:\/\//, ''));
    expect(kenv.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR).toBe('1');

    const test = kafka.healthcheck?.test;
    expect(kafka.healthcheck?.disable).not.toBe(true);
    expect(Array.isArray(test) ? test.join(' ') : test).toMatch(/kafka-broker-api-versions\.sh --bootstrap-server localhost:9092/);
    expect(Array.isArray(test) ? test[0] : 'CMD-SHELL').not.toBe('NONE');

    for (const node of NODES) {
      const s = cluster.services[node];
      expect(dependsOn(s), `${node} waits for a healthy kafka and postgres`).toEqual({ kafka: 'service_healthy', postgres: 'service_healthy' });
      const brokers = nodeConfig(s).kafkaBrokers;
      expect(brokers).toEqual(['kafka:9092']);
      for (const b of brokers!) expect(advertised, `${node}: ${b} is an advertised listener`).toContain(b);
    }
  });

  it('give each node its own data volume, mount no volume on two services, and import into the postgres service', () => {
    expect(STAGING_DIR).toBe('staging');
    const declared = Object.keys(cluster.volumes ?? {});
    const owners = new Map<string, string[]>();
    for (const [name, s] of Object.entries(cluster.services)) {
      for (const m of mounts(s)) {
        expect(m.named, `${name}: ${m.target} is a named volume, not a host folder`).toBe(true);
        expect(declared, `${name}: volume ${m.source} is declared`).toContain(m.source);
        owners.set(m.source!, [...(owners.get(m.source!) ?? []), name]);
      }
    }
    for (const [volume, services] of owners) expect(services, `volume ${volume} is mounted on one service only`).toHaveLength(1);
    for (const node of NODES) {
      const s = cluster.services[node];
      const config = nodeConfig(s);
      // The staging level and exported files are under the data dir: on the node's own volume.
      expect(mounts(s).map((m) => m.target.replace(/\/+$/, '')), `${node}: its data dir is its only mount`).toEqual([config.dataDir]);
      const target = new URL(config.targetUrl ?? 'missing://');
      expect(target.protocol, `${node}: the target is PostgreSQL`).toBe('postgres:');
      expect(target.hostname).toBe('postgres');
      expect(target.port).toBe('5432');
      expect(decodeURIComponent(target.username)).toBe(environment(cluster.services.postgres).POSTGRES_USER);
      expect(decodeURIComponent(target.password)).toBe(environment(cluster.services.postgres).POSTGRES_PASSWORD);
      expect(target.pathname).toBe(`/${environment(cluster.services.postgres).POSTGRES_DB}`);
    }
    const postgres = cluster.services.postgres;
    expect(postgres.image).toMatch(/^postgres:1[5-9]/);
    const test = postgres.healthcheck?.test;
    expect(Array.isArray(test) ? test.join(' ') : test).toMatch(/pg_isready/);
    expect(ports(postgres).map((p) => p.hostIp), 'PostgreSQL is published on loopback only').toEqual(['127.0.0.1']);

    const s = single.services.sluice;
    const dataDir = nodeConfig(s).dataDir;
    expect(mounts(s).find((m) => m.target === dataDir)?.named, `the single node keeps a named volume at ${dataDir}`).toBe(true);
  });

  it('split the roles: sluice-1 runs all, sluice-2 api, ingest, sink and import, with one master token', () => {
    const roles = (node: string): string[] => (environment(cluster.services[node]).SLUICE_ROLES ?? '').split(',').map((r) => r.trim()).filter(Boolean);
    for (const node of NODES) for (const r of roles(node)) expect(ALL_ROLES, `${node}: role ${r}`).toContain(r);
    expect(roles('sluice-1').sort()).toEqual([...ALL_ROLES].sort());
    expect(roles('sluice-2').sort()).toEqual(['api', 'import', 'ingest', 'sink']);
    expect(NODES.filter((n) => roles(n).includes('jobs')), 'jobs run on one node').toEqual(['sluice-1']);
    // loadConfig accepts the split (it refuses combinations that cannot work).
    for (const node of NODES) expect([...nodeConfig(cluster.services[node]).roles].sort()).toEqual(roles(node).sort());

    const raw = yaml.load(readFileSync(CLUSTER, 'utf8')) as ComposeFile;
    const tokens = NODES.map((n) => environment(raw.services[n]).SLUICE_MASTER_TOKEN);
    expect(tokens[0]).toMatch(/^\$\{SLUICE_MASTER_TOKEN:\?/);
    expect(tokens[1]).toBe(tokens[0]);
    expect(NODES.map((n) => nodeConfig(cluster.services[n]).masterToken)).toEqual([TOKEN_ENV.SLUICE_MASTER_TOKEN, TOKEN_ENV.SLUICE_MASTER_TOKEN]);
  });
});
