import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Sandbox without DISPERSA_ADMIN_TOKEN: one is generated on first start and kept in the data dir (mode 0600). */
export async function sandboxAdminToken(dataDir: string): Promise<{ token: string; created: boolean }> {
  const file = path.join(dataDir, 'admin-token');
  try {
    const token = (await readFile(file, 'utf8')).trim();
    if (token.length >= 16) return { token, created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dataDir, { recursive: true });
  const token = `adm_${randomBytes(24).toString('base64url')}`;
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return { token, created: true };
}
