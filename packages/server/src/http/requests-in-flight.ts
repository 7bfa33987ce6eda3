import type { Server } from 'node:http';

/**
 * How many requests the servers are serving at this moment: counted from each request's arrival to its response's
 * end or its connection's loss ('close' comes either way). A listener on the server, not a framework hook, so the
 * count costs a request one counter and one event handler. Background loops that would hold the requests up read it
 * to know whether anyone is waiting (run-worker.ts, restWhile).
 */
export function countRequestsInFlight(...servers: Server[]): () => number {
  let inFlight = 0;
  for (const server of servers) {
    server.on('request', (_request, response) => {
      inFlight++;
      response.once('close', () => {
        inFlight--;
      });
    });
  }
  return () => inFlight;
}
