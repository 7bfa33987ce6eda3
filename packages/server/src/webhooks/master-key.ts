import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The master key that seals the webhook signing keys at rest, so that a database dump alone does not give them
 * away. Every process serving one database needs the same key, so it is configured: DISPERSA_MASTER_KEY_FILE (a
 * file holding 32 bytes in base64) or DISPERSA_MASTER_KEY (the value). A sandbox without either generates one
 * into <dataDir>/secrets/webhook-master.key (owner-only) at first start; production refuses to start without one.
 */

export const MASTER_KEY_BYTES = 32;

export class MasterKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MasterKeyError';
  }
}

export function masterKeyPath(dataDir: string): string {
  return path.join(dataDir, 'secrets', 'webhook-master.key');
}

function decode(text: string, file: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== MASTER_KEY_BYTES) {
    throw new MasterKeyError(`${file} must hold ${MASTER_KEY_BYTES} bytes in base64; it holds ${key.length}`);
  }
  return key;
}

export async function loadOrCreateMasterKey(dataDir: string): Promise<Buffer> {
  const file = masterKeyPath(dataDir);
  try {
    return decode(await readFile(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const key = randomBytes(MASTER_KEY_BYTES);
  // The key is written whole under a private name and then linked into place: link fails with EEXIST when another
  // process got there first, and the name never points at a file still being written (with writeFile 'wx' a
  // concurrent first start could read the new file while it was still empty).
  const draft = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  try {
    await writeFile(draft, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    // The mode given to writeFile is filtered by the umask; make owner-only explicit.
    await chmod(draft, 0o600);
    await link(draft, file);
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return decode(await readFile(file, 'utf8'), file);
  } finally {
    await rm(draft, { force: true });
  }
}

/** The key to use and where it came from, as an operator names it (for the messages that stop a start). */
export interface ResolvedMasterKey {
  key: Buffer;
  origin: string;
}

/** Reads the configured key; a file that cannot be read or holds no 32-byte key stops the start naming it. */
export async function resolveMasterKey(
  source: { kind: 'file'; path: string } | { kind: 'value'; key: Buffer } | { kind: 'generated' },
  dataDir: string,
): Promise<ResolvedMasterKey> {
  if (source.kind === 'value') return { key: source.key, origin: 'DISPERSA_MASTER_KEY' };
  if (source.kind === 'file') {
    const origin = `DISPERSA_MASTER_KEY_FILE (${source.path})`;
    let text: string;
    try {
      text = await readFile(source.path, 'utf8');
    } catch (err) {
      throw new MasterKeyError(`${origin}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const key = Buffer.from(text.trim(), 'base64');
    if (key.length !== MASTER_KEY_BYTES) {
      throw new MasterKeyError(`${origin}: must hold ${MASTER_KEY_BYTES} bytes in base64; it holds ${key.length}`);
    }
    return { key, origin };
  }
  return { key: await loadOrCreateMasterKey(dataDir), origin: `the generated key in ${masterKeyPath(dataDir)}` };
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = 'v1';

/**
 * AES-256-GCM, text form "v1.<iv>.<ciphertext>.<tag>" (base64url). aad binds the sealed bytes to what they
 * belong to (environment and kid), so a sealed key copied to another row or environment fails to open.
 */
export function seal(masterKey: Buffer, plaintext: Buffer, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  const parts = [iv, ciphertext, cipher.getAuthTag()].map((b) => b.toString('base64url'));
  return [FORMAT, ...parts].join('.');
}

/** Throws MasterKeyError when the text was sealed under another key or aad, or was altered. */
export function open(masterKey: Buffer, sealed: string, aad: string): Buffer {
  const [format, iv, ciphertext, tag] = sealed.split('.');
  if (format !== FORMAT || iv === undefined || ciphertext === undefined || tag === undefined) {
    throw new MasterKeyError('sealed value has an unknown format');
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', masterKey, Buffer.from(iv, 'base64url'), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
  } catch {
    throw new MasterKeyError('cannot open a sealed signing key: wrong master key, or the stored value was altered');
  }
}
