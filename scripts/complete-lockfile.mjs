#!/usr/bin/env node
// The registry this project installs from lacks some platform builds of Biome and Rollup at the exact versions
// their packages name as optional dependencies, so `npm install` leaves those entries out of package-lock.json and
// `npm ci` then refuses the lockfile as out of sync. This adds the missing optional entries back, marked with their
// os/cpu/libc so npm skips them on other platforms (an optional package that cannot be had is only a warning).
// Run it after every `npm install` that rewrites the lockfile: node scripts/complete-lockfile.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const OSES = ['android', 'darwin', 'freebsd', 'openbsd', 'openharmony', 'win32', 'linux', 'netbsd', 'sunos', 'aix'];
const CPUS = ['arm64', 'x64', 'ia32', 'arm', 'loong64', 'ppc64', 'riscv64', 's390x'];

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const packages = lock.packages;
let added = 0;
for (const [key, meta] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const target = `node_modules/${dep}`;
    const nested = key === '' ? target : `${key}/node_modules/${dep}`;
    if (packages[target] || packages[nested]) continue;
    const name = dep.split('/').pop();
    const entry = { version, optional: true };
    const os = OSES.find((o) => name.includes(o));
    const cpu = CPUS.find((c) => new RegExp(`-${c}(-|$)`).test(name));
    if (os) entry.os = [os];
    if (cpu) entry.cpu = [cpu];
    if (name.includes('musl')) entry.libc = ['musl'];
    packages[target] = entry;
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: ${added} optional platform entries added`);
