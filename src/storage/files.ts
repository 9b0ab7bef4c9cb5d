/**
 * Storage files (`GET /v2/storage/files/{id}`): what exports write. The file itself is on the
 * node that wrote it, under `<dataDir>/files/<id>/`; its record is in the metadata (shared in
 * a cluster) with the public URL of that node. The record's `url` is a signed download URL of
 * that node (as S3's presigned URLs: whoever holds it may download until it expires, without a
 * token); GET files/{id} signs a new one on every call.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { KeySpace, MetadataStore } from '../ports/metadata-store.js';
import type { IdAllocator } from '../ports/id-allocator.js';

export interface StoredFile {
  id: string;
  name: string;
  created: string;
  sizeBytes: number;
  contentType: string;
  tags: string[];
  /** ISO time after which the file is deleted. */
  expires: string;
  creatorToken: { id: string; description: string };
  /** Path relative to the data directory of the node that holds it. */
  path: string;
  /** The public API URL of that node. */
  nodeUrl: string;
  /** Signs the download URLs; never leaves the server. */
  secret: string;
}

export const FILE_PREFIX = 'storage/fileUpload/';
/** Storage files, shared by the cluster: the record, with the URL of the node that holds the file. */
export const FILE_KEY_SPACES: readonly KeySpace[] = [{ prefix: FILE_PREFIX, shared: true }];
/** How long a signed download URL is valid. */
const URL_VALIDITY_MS = 3_600_000;

const key = (id: string) => `${FILE_PREFIX}${id.padStart(15, '0')}`;

export class FileService {
  constructor(
    private readonly store: MetadataStore,
    private readonly ids: IdAllocator,
    private readonly dataDir: string,
    private readonly publicApiUrl: string,
  ) {}

  /** A new file id and the folder (relative to the data dir) its file goes into. */
  reserve(): { id: string; dir: string } {
    const id = this.store.transact((tx) => this.ids.next(tx, 'storage'));
    return { id, dir: join('files', id) };
  }

  record(file: Omit<StoredFile, 'created' | 'nodeUrl' | 'secret'>): StoredFile {
    const stored: StoredFile = { ...file, created: new Date().toISOString(), nodeUrl: this.publicApiUrl, secret: randomBytes(24).toString('base64url') };
    this.store.transact((tx) => tx.put(key(file.id), stored));
    return stored;
  }

  get(id: string): StoredFile | undefined {
    if (!/^\d{1,15}$/.test(id)) return undefined;
    const file = this.store.get<StoredFile>(key(id));
    return file && Date.parse(file.expires) > Date.now() ? file : undefined;
  }

  /** A download URL of the node holding the file, valid for an hour. */
  downloadUrl(file: StoredFile, now = Date.now()): string {
    const expires = Math.floor((now + URL_VALIDITY_MS) / 1000);
    return `${file.nodeUrl}/v2/storage/files/${file.id}/download?expires=${expires}&signature=${sign(file, expires)}`;
  }

  /** Whether `expires`/`signature` are a valid, unexpired signature of the file's download. */
  verify(file: StoredFile, expires: string | undefined, signature: string | undefined, now = Date.now()): boolean {
    if (!expires || !signature || !/^\d+$/.test(expires) || Number(expires) * 1000 < now) return false;
    const expected = Buffer.from(sign(file, Number(expires)));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  localPath(file: StoredFile): string {
    return join(this.dataDir, file.path);
  }

  /**
   * Deletes expired files: their records (any node may), and the folders of this node whose
   * record is expired or gone.
   */
  async purgeExpired(now = Date.now()): Promise<number> {
    const expired = this.store.list<StoredFile>(FILE_PREFIX).filter((e) => Date.parse(e.value.expires) <= now);
    if (expired.length > 0) this.store.transact((tx) => expired.forEach((e) => tx.delete(e.key)));
    let removed = 0;
    let dirs: string[] = [];
    try {
      dirs = await readdir(join(this.dataDir, 'files'));
    } catch {
      return 0;
    }
    for (const dir of dirs) {
      const file = /^\d+$/.test(dir) ? this.store.get<StoredFile>(key(dir)) : undefined;
      // A folder without a record is an export still being written only for a short while.
      if (file && Date.parse(file.expires) > now) continue;
      if (!file && (await isRecent(join(this.dataDir, 'files', dir), now))) continue;
      await rm(join(this.dataDir, 'files', dir), { recursive: true, force: true });
      removed++;
    }
    return removed;
  }
}

function sign(file: StoredFile, expires: number): string {
  return createHmac('sha256', file.secret).update(`${file.id}.${expires}`).digest('base64url');
}

async function isRecent(path: string, now: number): Promise<boolean> {
  try {
    return now - (await stat(path)).mtimeMs < 24 * 3_600_000;
  } catch {
    return false;
  }
}
