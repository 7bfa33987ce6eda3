import type { RateSource } from './rate-publisher.ts';
import type { RateService } from './rates.ts';

/**
 * A RateService that never lets `base` lapse where a RateSource keeps it (the sandbox): a lookup that finds
 * nothing in force for that base asks the source to publish, then looks again. The source's timer normally
 * republishes long before expiry; this covers the moments it cannot, such as a laptop waking from sleep or a
 * test clock moved past expiry, so a sandbox client never sees a 503 the operator did not arrange.
 * Concurrent misses share one tick, so a burst of requests publishes once.
 */
export function keepingRateInForce(
  rates: RateService,
  source: Pick<RateSource, 'tick'>,
  base: string,
  onError: (err: unknown) => void,
): RateService {
  let pending: Promise<void> | null = null;

  function refresh(): Promise<void> {
    pending ??= source
      .tick()
      .then(() => undefined)
      // A failed publication leaves the honest answer (no rate in force, 503) rather than a 500.
      .catch(onError)
      .finally(() => {
        pending = null;
      });
    return pending;
  }

  return {
    ...rates,
    async inForce(clientId, wanted, at) {
      const found = await rates.inForce(clientId, wanted, at);
      if (found !== null || wanted !== base) return found;
      await refresh();
      return rates.inForce(clientId, wanted, at);
    },
    async forClient(client, at) {
      const result = await rates.forClient(client, at);
      if (result.kind !== 'no_rate' || client.currency !== base) return result;
      await refresh();
      return rates.forClient(client, at);
    },
  };
}
