import { readFileSync } from 'node:fs';

/** The running release, from packages/server/package.json. */
export const SERVICE_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
