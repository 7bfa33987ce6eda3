import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadOrCreateMasterKey, MasterKeyError, masterKeyPath, open, seal } from '../../src/webhooks/master-key.ts';

let slowExclusiveWrites = false;
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs/promises')>();
  const writeFile: typeof fs.writeFile = async (file, data, options) => {
    const flag = typeof options === 'object' && options !== null ? options.flag : undefined;
    if (!slowExclusiveWrites || flag !== 'wx') return fs.writeFile(file, data, options);
    const handle = await fs.open(file as string, 'wx', 0o600);
    try {
      await new Promise((resolve) => setTimeout(resolve, 30));
      await handle.writeFile(data as string);
    } finally {
      await handle.close();
    }
  };
  return { ...fs, default: { ...fs, writeFile }, writeFile };
});

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'dispersa-master-key-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('loadOrCreateMasterKey', () => {
  it('creates 32 random bytes at <dataDir>/secrets/webhook-master.key, owner-only, and reuses them', async () => {
    const first = await loadOrCreateMasterKey(dataDir);
    expect(first.length).toBe(32);
    const file = masterKeyPath(dataDir);
    expect(file).toBe(path.join(dataDir, 'secrets', 'webhook-master.key'));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(file))).mode & 0o077).toBe(0);
    expect(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64').equals(first)).toBe(true);
    expect((await loadOrCreateMasterKey(dataDir)).equals(first)).toBe(true);
  });

  it('concurrent first starts agree on one key and never read a half-written file', async () => {
    // A slow disk: an exclusive create leaves the file empty for a while before its bytes land, the window in
    // which another first start could open it and find no key.
    slowExclusiveWrites = true;
    try {
      const keys = await Promise.all(Array.from({ length: 4 }, () => loadOrCreateMasterKey(dataDir)));
      for (const k of keys) expect(k.equals(keys[0]!)).toBe(true);
      expect(await readdir(path.dirname(masterKeyPath(dataDir)))).toEqual(['webhook-master.key']);
    } finally {
      slowExclusiveWrites = false;
    }
  });

  it('refuses a file that does not hold 32 bytes', async () => {
    await loadOrCreateMasterKey(dataDir);
    await writeFile(masterKeyPath(dataDir), randomBytes(16).toString('base64'));
    await expect(loadOrCreateMasterKey(dataDir)).rejects.toThrow(MasterKeyError);
  });
});

describe('seal and open', () => {
  const key = randomBytes(32);
  const secret = Buffer.from('the private key bytes');

  it('round-trips, and the sealed text does not contain the plaintext', () => {
    const sealed = seal(key, secret, 'sandbox:k1');
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain(secret.toString('base64url'));
    expect(open(key, sealed, 'sandbox:k1').equals(secret)).toBe(true);
    // A fresh IV each time: the same plaintext never seals to the same text.
    expect(seal(key, secret, 'sandbox:k1')).not.toBe(sealed);
  });

  it('fails under another key, another aad, or an altered ciphertext', () => {
    const sealed = seal(key, secret, 'sandbox:k1');
    expect(() => open(randomBytes(32), sealed, 'sandbox:k1')).toThrow(MasterKeyError);
    expect(() => open(key, sealed, 'production:k1')).toThrow(MasterKeyError);
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[2]!, 'base64url');
    ct[0] = ct[0]! ^ 1;
    parts[2] = ct.toString('base64url');
    expect(() => open(key, parts.join('.'), 'sandbox:k1')).toThrow(MasterKeyError);
    expect(() => open(key, 'v2.a.b.c', 'sandbox:k1')).toThrow(MasterKeyError);
  });
});
