/**
 * The metadata's key spaces: every key prefix the modules write is declared exactly once (next
 * to the module that owns it, collected in server.ts KEY_SPACES), and cluster mode replicates
 * exactly the shared ones, as it did when replicated-store.ts listed their prefixes itself.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { ReplicatedMetadataStore, type MetadataChange, type MetadataChangeLog } from '../../../src/adapters/metadata/replicated-store.js';
import type { KeySpace } from '../../../src/ports/metadata-store.js';
import { KEY_SPACES } from '../../../src/server.js';

const SRC = join(import.meta.dirname, '../../../src');

/** Keys only read, never written (a probe that the store answers). */
const READ_ONLY_KEYS = ['node/readiness-probe'];

/**
 * The prefixes replicated-store.ts hard-coded before the repositories declared their key spaces,
 * and the shared spaces added since: the parked records (actors/stopped-mappings.ts), shared and
 * background like the mapping failures they become, so that a partition's next owner skips them.
 */
const FORMER_SHARED = [
  'definition/', 'task/', 'storage/token/', 'storage/tokenByHash/', 'storage/configs/', 'storage/configRows/',
  'storage/configVersions/', 'storage/statsReset/', 'storage/storageJob/', 'storage/fileUpload/', 'cluster/',
  'storage/mappingFailure/', 'storage/mappingFailureCount/', 'storage/mappingFailed/', 'storage/mappingParked/',
  // Since then: the project's encryption key id (storage/encryption-key.ts), which every node checks its key against.
  'storage/encryptionKey',
];
const FORMER_BACKGROUND = ['cluster/', 'storage/mappingFailure/', 'storage/mappingFailureCount/', 'storage/mappingFailed/', 'storage/mappingParked/'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'console' ? [] : sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The metadata key literals of the sources (the constant part before any `${...}`), outside comments. */
function keyLiterals(): Array<{ literal: string; file: string }> {
  const found: Array<{ literal: string; file: string }> = [];
  for (const file of sourceFiles(SRC)) {
    // The metadata port and the replicated store speak of keys in general, not of their own.
    if (file.includes(join('ports', 'metadata-store.ts')) || file.includes(join('adapters', 'metadata', 'replicated-store.ts'))) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (/^\s*(\*|\/\/|\/\*)/.test(line)) continue;
      for (const m of line.matchAll(/['`]((?:definition|task|storage|cluster|queue|node)\/[A-Za-z0-9_\-/]*)/g)) {
        found.push({ literal: m[1], file: relative(SRC, file) });
      }
    }
  }
  return found;
}

const within = (key: string, space: KeySpace) => key.startsWith(space.prefix);

describe('metadata key spaces', () => {
  it('are declared once each, none inside another', () => {
    const prefixes = KEY_SPACES.map((s) => s.prefix);
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const a of prefixes) for (const b of prefixes) if (a !== b) expect(a.startsWith(b), `${a} is inside ${b}`).toBe(false);
    for (const s of KEY_SPACES) if (s.background) expect(s.shared, `${s.prefix}: background keys are shared keys`).toBe(true);
  });

  it('cover every key prefix the modules write, each by exactly one space', () => {
    const literals = keyLiterals();
    expect(literals.length).toBeGreaterThan(30);
    for (const { literal, file } of literals) {
      if (READ_ONLY_KEYS.includes(literal)) continue;
      const spaces = KEY_SPACES.filter((s) => within(literal, s)).map((s) => s.prefix);
      expect(spaces, `${literal} (${file})`).toHaveLength(1);
    }
    // And every declared space is used by some module.
    for (const space of KEY_SPACES) expect(literals.some(({ literal }) => within(literal, space)), space.prefix).toBe(true);
  });

  it('share and background exactly the keys they did when replicated-store.ts listed them', () => {
    for (const { literal } of keyLiterals()) {
      if (READ_ONLY_KEYS.includes(literal)) continue;
      const space = KEY_SPACES.find((s) => within(literal, s))!;
      expect(space.shared, literal).toBe(FORMER_SHARED.some((p) => literal.startsWith(p)));
      expect(space.background ?? false, literal).toBe(FORMER_BACKGROUND.some((p) => literal.startsWith(p)));
    }
  });

  describe('the replicated store', () => {
    const dirs: string[] = [];
    afterEach(() => {
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    });

    it('replicates exactly the shared spaces, and only foreground writes move the write mark', async () => {
      const appended: MetadataChange[] = [];
      const log: MetadataChangeLog = {
        append: async (changes) => void appended.push(...changes),
        follow: async () => undefined,
        reserve: async () => 0,
        caughtUp: async () => undefined,
        close: async () => undefined,
      };
      const dir = mkdtempSync(join(tmpdir(), 'sluice-key-spaces-'));
      dirs.push(dir);
      const store = await ReplicatedMetadataStore.open(new LmdbMetadataStore(dir), log, KEY_SPACES);
      try {
        for (const space of KEY_SPACES) {
          const key = space.prefix.endsWith('/') ? `${space.prefix}1/x` : space.prefix;
          const before = store.writeMark();
          store.transact((tx) => tx.put(key, 1));
          expect(store.writeMark() > before, key).toBe(space.shared && !space.background);
        }
        await store.settled();
        const replicated = appended.map((c) => KEY_SPACES.find((s) => within(c.key, s))!.prefix);
        expect(replicated.sort()).toEqual(KEY_SPACES.filter((s) => s.shared).map((s) => s.prefix).sort());
      } finally {
        await store.close();
      }
    });
  });
});
