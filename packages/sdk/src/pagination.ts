import { DispersaError } from './errors.ts';
import type { Page } from './types.ts';

/**
 * Walks a keyset listing: each page's nextCursor (the last id of the page) asks for the next, smaller ids.
 * Stops on an empty page or when the server says hasMore false. Items created meanwhile get larger ids than the
 * cursor, so they never shift the walk. A cursor that does not move would loop forever, so it is an error.
 */
export async function* iteratePages<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    for (const item of page.data) yield item;
    if (page.data.length === 0 || !page.hasMore || page.nextCursor === null) return;
    if (page.nextCursor === cursor) {
      throw new DispersaError(`listing returned cursor ${cursor} twice; stopping instead of looping`);
    }
    cursor = page.nextCursor;
  }
}
