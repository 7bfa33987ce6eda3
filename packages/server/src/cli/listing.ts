import { DispersaError, type Page } from '@dispersa/sdk';
import type { CommandContext } from './command.ts';

/**
 * Keyset listings: one page by default (the page object, with nextCursor for the next call), or with --all
 * every item from --cursor on, as one JSON array, with a progress count on stderr while it walks.
 */
export async function listing<T>(
  ctx: CommandContext,
  label: string,
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
): Promise<Page<T> | T[]> {
  const start = ctx.flags.string('cursor');
  if (!ctx.flags.boolean('all')) return fetchPage(start);

  const items: T[] = [];
  const progress = ctx.progress(label);
  let cursor = start;
  let pages = 0;
  for (;;) {
    const page = await fetchPage(cursor);
    pages += 1;
    items.push(...page.data);
    progress.update(items.length, `${pages} page${pages === 1 ? '' : 's'}`);
    if (page.data.length === 0 || !page.hasMore || page.nextCursor === null) break;
    if (page.nextCursor === cursor) {
      throw new DispersaError(`listing returned cursor ${cursor} twice; stopping instead of looping`);
    }
    cursor = page.nextCursor;
  }
  progress.done(`${items.length} in ${pages} page${pages === 1 ? '' : 's'}`);
  return items;
}

export const LISTING_OPTIONS = {
  limit: { type: 'string', value: 'N', description: 'page size (server default 20, at most 100)' },
  cursor: { type: 'string', value: 'ID', description: 'start after this id (the nextCursor of a previous page)' },
  all: { type: 'boolean', description: 'walk every page and print one JSON array' },
} as const;
