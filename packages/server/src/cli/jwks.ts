import { AuthenticationError, type Jwks } from '@dispersa/sdk';
import type { CommandContext } from './command.ts';
import { requestJson } from './http-json.ts';
import { openClient } from './sdk-client.ts';

/**
 * The service's webhook key set. The route is public, so it is fetched unsigned; should a deployment enforce
 * signing there (the spec leaves it open), a 401 is retried once as a signed request with the client's key.
 */
export async function fetchJwks(ctx: CommandContext, url: string): Promise<Jwks> {
  try {
    return (await requestJson({ method: 'GET', url })) as Jwks;
  } catch (err) {
    if (!(err instanceof AuthenticationError)) throw err;
    return (await openClient(ctx)).webhook.keys();
  }
}
