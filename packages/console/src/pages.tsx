import { useEffect, useState } from 'preact/hooks';
import { api, metricsText, query } from './api.ts';
import { Chart } from './chart.tsx';
import { money, parseMetrics, time, total } from './format.ts';
import { useLoad } from './hooks.ts';

function Failure({ error }: { error: string | null }) {
  return error === null ? null : (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

/** A form whose submit calls the operator API and reports the service's answer. */
function ActionForm(props: {
  label: string;
  testId: string;
  fields: (set: (k: string, v: string) => void, values: Record<string, string>) => preact.ComponentChildren;
  initial: Record<string, string>;
  run: (values: Record<string, string>) => Promise<unknown>;
  done: () => void;
}) {
  const [values, setValues] = useState(props.initial);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: string, v: string) => setValues((old) => ({ ...old, [k]: v }));
  return (
    <form
      class="action"
      data-testid={props.testId}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          await props.run(values);
          props.done();
        } catch (err) {
          setError(err instanceof Error ? err.message : String(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      {props.fields(set, values)}
      <button type="submit" disabled={busy}>
        {props.label}
      </button>
      <Failure error={error} />
    </form>
  );
}

// ---- Overview: the metrics, as a rolling window since the page opened ----

interface Point {
  requestsPerSecond: number;
  unknown: number;
  underReview: number;
  outbox: number;
  outboxAge: number;
  exceptions: number;
  unexplained: number;
  delivered: number;
  failedDeliveries: number;
}

export function Overview() {
  const [points, setPoints] = useState<Point[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let previous: { at: number; requests: number } | null = null;
    let live = true;
    async function sample() {
      try {
        const s = parseMetrics(await metricsText());
        const at = Date.now();
        const requests = total(s, 'dispersa_http_requests_total', { listener: 'public' });
        const rate =
          previous === null ? 0 : (requests - previous.requests) / Math.max(0.001, (at - previous.at) / 1000);
        previous = { at, requests };
        const point: Point = {
          requestsPerSecond: rate,
          unknown: total(s, 'dispersa_payments_open', { state: 'unknown' }),
          underReview: total(s, 'dispersa_payments_open', { state: 'unknown', sub_status: 'under_review' }),
          outbox: total(s, 'dispersa_outbox_pending_events'),
          outboxAge: total(s, 'dispersa_outbox_oldest_pending_age_seconds'),
          exceptions: total(s, 'dispersa_reconciliation_open_exceptions'),
          unexplained: total(s, 'dispersa_reconciliation_balance_unexplained_minor', { currency: 'VES' }) / 100,
          delivered: total(s, 'dispersa_webhook_deliveries_total', { result: 'delivered' }),
          failedDeliveries:
            total(s, 'dispersa_webhook_deliveries_total', { result: 'retrying' }) +
            total(s, 'dispersa_webhook_deliveries_total', { result: 'dead' }),
        };
        if (live) {
          setError(null);
          setPoints((old) => [...old.slice(-59), point]);
        }
      } catch (err) {
        if (live) setError(err instanceof Error ? err.message : String(err));
      }
    }
    void sample();
    const timer = setInterval(sample, 5000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  const series = (pick: (p: Point) => number) => points.map(pick);
  return (
    <section>
      <h2>Overview</h2>
      <p class="hint">From GET /metrics every 5 s, since this page opened. Alert rules: docs/operations.md.</p>
      <Failure error={error} />
      <div class="charts">
        <Chart title="Public requests / s" points={series((p) => p.requestsPerSecond)} testId="chart-requests" />
        <Chart title="Payments unknown" points={series((p) => p.unknown)} />
        <Chart title="Payments under review" points={series((p) => p.underReview)} testId="chart-under-review" />
        <Chart title="Outbox: events not delivered" points={series((p) => p.outbox)} />
        <Chart title="Outbox: oldest undelivered (s)" points={series((p) => p.outboxAge)} />
        <Chart title="Webhooks delivered (total)" points={series((p) => p.delivered)} />
        <Chart title="Webhook attempts failed (total)" points={series((p) => p.failedDeliveries)} />
        <Chart title="Open reconciliation exceptions" points={series((p) => p.exceptions)} />
        <Chart
          title="Bank vs ledger, unexplained (VES)"
          points={series((p) => p.unexplained)}
          format={(v) => v.toFixed(2)}
        />
      </div>
    </section>
  );
}

// ---- Clients ----

export function Clients() {
  const list = useLoad(() => api('GET', '/admin/v1/clients?limit=100'), 'clients');
  const [open, setOpen] = useState<string | null>(null);
  const detail = useLoad(
    () => (open === null ? Promise.resolve(null) : api('GET', `/admin/v1/clients/${open}`)),
    open ?? '',
  );
  return (
    <section>
      <h2>Clients</h2>
      <Failure error={list.error} />
      <table>
        <thead>
          <tr>
            <th>Client</th>
            <th>Name</th>
            <th>Available balance</th>
            <th>Created</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((c: any) => (
            <tr key={c.clientId}>
              <td>
                <button type="button" class="link" onClick={() => setOpen(c.clientId)}>
                  {c.clientId}
                </button>
              </td>
              <td>{c.name}</td>
              <td class="num">{money(c.balance?.availableMinor, c.currency)}</td>
              <td>{time(c.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {detail.data && (
        <div class="panel" data-testid="client-detail">
          <h3>
            {detail.data.name} <small>{detail.data.clientId}</small>
          </h3>
          <p>Available: {money(detail.data.balance?.availableMinor, detail.data.currency)}</p>
          <table>
            <thead>
              <tr>
                <th>Key</th>
                <th>Active</th>
                <th>Fingerprint</th>
                <th>Limits (per payment / day)</th>
              </tr>
            </thead>
            <tbody>
              {detail.data.keys.map((k: any) => (
                <tr key={k.keyId}>
                  <td>{k.keyId}</td>
                  <td>{k.active ? 'yes' : 'no'}</td>
                  <td class="mono">{k.publicKeyFingerprint}</td>
                  <td>
                    {k.limits
                      .map((l: any) => `${l.rail} ${money(l.perPaymentMaxMinor)} / ${money(l.dailyMaxMinor)}`)
                      .join(' · ') || 'none'}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

// ---- Payments, and the under_review queue ----

const STATES = ['', 'processing', 'pending', 'completed', 'failed', 'unknown'];

export function Payments() {
  const [filter, setFilter] = useState({ state: '', subStatus: '', clientId: '' });
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const key = JSON.stringify({ filter, cursor });
  const page = useLoad(() => api('GET', `/admin/v1/payments${query({ ...filter, cursor, limit: '50' })}`), key);
  const set = (k: string, v: string) => {
    setCursor(undefined);
    setFilter((f) => ({ ...f, [k]: v }));
  };
  return (
    <section>
      <h2>Payments</h2>
      <div class="filters">
        <label>
          State
          <select value={filter.state} onChange={(e) => set('state', e.currentTarget.value)} data-testid="filter-state">
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s || 'any'}
              </option>
            ))}
          </select>
        </label>
        <label>
          Sub-status
          <input value={filter.subStatus} onChange={(e) => set('subStatus', e.currentTarget.value)} />
        </label>
        <label>
          Client
          <input value={filter.clientId} onChange={(e) => set('clientId', e.currentTarget.value)} />
        </label>
        <button
          type="button"
          data-testid="under-review-queue"
          onClick={() => {
            setCursor(undefined);
            setFilter({ state: 'unknown', subStatus: 'under_review', clientId: '' });
          }}
        >
          Under review queue
        </button>
      </div>
      <Failure error={page.error} />
      <table data-testid="payments">
        <thead>
          <tr>
            <th>Payment</th>
            <th>Client</th>
            <th>State</th>
            <th>Amount</th>
            <th>Rail</th>
            <th>Updated</th>
            <th>Action</th>
          </tr>
        </thead>
        <tbody>
          {(page.data?.data ?? []).map((p: any) => (
            <tr key={p.intentId} data-payment={p.intentId}>
              <td class="mono">{p.intentId}</td>
              <td class="mono">{p.clientId}</td>
              <td>
                <span class={`state ${p.state}`}>{p.state}</span>
                {p.subStatus && <small> {p.subStatus}</small>}
                {p.failureCode && <small> ({p.failureCode})</small>}
              </td>
              <td class="num">{money(p.amountMinor, p.currency)}</td>
              <td>{p.rail}</td>
              <td>{time(p.updatedAt)}</td>
              <td>
                {p.state === 'unknown' && (
                  <ActionForm
                    label="Resolve"
                    testId={`resolve-${p.intentId}`}
                    initial={{ outcome: 'completed', note: '' }}
                    fields={(setValue, v) => (
                      <>
                        <select value={v['outcome']} onChange={(e) => setValue('outcome', e.currentTarget.value)}>
                          <option value="completed">completed</option>
                          <option value="failed">failed</option>
                        </select>
                        <input
                          placeholder="why (kept with the decision)"
                          value={v['note']}
                          onInput={(e) => setValue('note', e.currentTarget.value)}
                        />
                      </>
                    )}
                    run={(v) => api('POST', `/admin/v1/payments/${p.intentId}/resolve`, v)}
                    done={page.reload}
                  />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {page.data?.hasMore && (
        <button type="button" onClick={() => setCursor(page.data.nextCursor)}>
          Older
        </button>
      )}
    </section>
  );
}

// ---- Reconciliation exceptions ----

export function Reconciliation() {
  const [status, setStatus] = useState('open');
  const list = useLoad(
    () => api('GET', `/admin/v1/reconciliation/exceptions${query({ status, limit: '50' })}`),
    status,
  );
  const recon = useLoad(() => api('GET', '/admin/v1/reconciliation/status'), `status-${status}`);
  return (
    <section>
      <h2>Reconciliation</h2>
      {recon.data && <pre class="status">{JSON.stringify(recon.data, null, 2)}</pre>}
      <div class="filters">
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="open">open</option>
            <option value="resolved">resolved</option>
            <option value="">any</option>
          </select>
        </label>
      </div>
      <Failure error={list.error} />
      {(list.data?.data ?? []).map((x: any) => (
        <details key={x.id} class="panel" data-exception={x.id}>
          <summary>
            <strong>{x.kind}</strong> {x.id} · {x.status} · {money(x.amountMinor, x.currency ?? undefined)} ·{' '}
            {time(x.createdAt)}
          </summary>
          <h4>Bank lines</h4>
          <table>
            <tbody>
              {[...x.bankLines, ...x.relatedBankLines].map((l: any) => (
                <tr key={l.bankLineId}>
                  <td class="mono">{l.bankLineId}</td>
                  <td>{l.direction}</td>
                  <td class="num">{money(l.amountMinor, l.currency)}</td>
                  <td>{l.reference}</td>
                  <td>{l.valueDate}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {x.payment && (
            <p>
              Payment <span class="mono">{x.payment.id}</span>: {x.payment.state} {x.payment.subStatus ?? ''}{' '}
              {money(x.payment.amountMinor, x.payment.currency)}
            </p>
          )}
          <h4>Evidence</h4>
          <pre>{JSON.stringify(x.details, null, 2)}</pre>
          {x.status === 'open' ? (
            <ActionForm
              label="Resolve"
              testId={`resolve-${x.id}`}
              initial={{ note: '', resolvedBy: '' }}
              fields={(setValue, v) => (
                <>
                  <input
                    placeholder="what was done"
                    value={v['note']}
                    onInput={(e) => setValue('note', e.currentTarget.value)}
                  />
                  <input
                    placeholder="your name"
                    value={v['resolvedBy']}
                    onInput={(e) => setValue('resolvedBy', e.currentTarget.value)}
                  />
                </>
              )}
              run={(v) =>
                api('POST', `/admin/v1/reconciliation/exceptions/${x.id}/resolve`, {
                  note: v['note'],
                  ...(v['resolvedBy'] ? { resolvedBy: v['resolvedBy'] } : {}),
                })
              }
              done={list.reload}
            />
          ) : (
            <p>
              Resolved by {x.resolvedBy} at {time(x.resolvedAt)}: {x.note}
            </p>
          )}
        </details>
      ))}
    </section>
  );
}

// ---- Webhook deliveries, attempts and replay ----

export function Webhooks() {
  const [clientId, setClientId] = useState('');
  const [eventId, setEventId] = useState<string | null>(null);
  const attempts = useLoad(
    () => api('GET', `/admin/v1/webhooks/deliveries${query({ clientId, limit: '100' })}`),
    clientId,
  );
  const detail = useLoad(
    () => (eventId === null ? Promise.resolve(null) : api('GET', `/admin/v1/webhooks/events/${eventId}`)),
    eventId ?? '',
  );
  return (
    <section>
      <h2>Webhook deliveries</h2>
      <div class="filters">
        <label>
          Client
          <input value={clientId} onChange={(e) => setClientId(e.currentTarget.value)} />
        </label>
      </div>
      <Failure error={attempts.error} />
      {detail.data && (
        <div class="panel" data-testid="event-detail">
          <h3>
            Event <span class="mono">{detail.data.eventId}</span> · {detail.data.deliveryStatus}
          </h3>
          <table>
            <thead>
              <tr>
                <th>#</th>
                <th>Answer</th>
                <th>Duration</th>
                <th>At</th>
              </tr>
            </thead>
            <tbody>
              {detail.data.attemptLog.map((a: any) => (
                <tr key={a.id}>
                  <td>{a.attempt}</td>
                  <td>{a.statusCode ?? a.error}</td>
                  <td class="num">{a.durationMs} ms</td>
                  <td>{time(a.attemptedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {detail.data.replays.map((r: any) => (
            <p key={r.createdAt}>
              Replayed from {r.fromStatus} by {r.requestedBy} at {time(r.createdAt)}: {r.note}
            </p>
          ))}
          <pre>{JSON.stringify(detail.data.body, null, 2)}</pre>
          {detail.data.deliveryStatus !== 'pending' && (
            <ActionForm
              label="Replay"
              testId="replay"
              initial={{ note: '' }}
              fields={(setValue, v) => (
                <input placeholder="why" value={v['note']} onInput={(e) => setValue('note', e.currentTarget.value)} />
              )}
              run={(v) => api('POST', `/admin/v1/webhooks/events/${detail.data.eventId}/replay`, v)}
              done={() => {
                detail.reload();
                attempts.reload();
              }}
            />
          )}
        </div>
      )}
      <table>
        <thead>
          <tr>
            <th>Event</th>
            <th>Client</th>
            <th>#</th>
            <th>Answer</th>
            <th>URL</th>
            <th>At</th>
          </tr>
        </thead>
        <tbody>
          {(attempts.data?.data ?? []).map((a: any) => (
            <tr key={a.id}>
              <td>
                <button type="button" class="link mono" onClick={() => setEventId(a.eventId)}>
                  {a.eventId}
                </button>
              </td>
              <td class="mono">{a.clientId}</td>
              <td>{a.attempt}</td>
              <td class={a.statusCode !== null && a.statusCode < 300 ? 'ok' : 'bad'}>{a.statusCode ?? a.error}</td>
              <td>{a.url}</td>
              <td>{time(a.attemptedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

// ---- Rates and quotes ----

export function Rates() {
  const rates = useLoad(() => api('GET', '/admin/v1/rates?limit=50'), 'rates');
  const quotes = useLoad(() => api('GET', '/admin/v1/quotes?limit=50'), 'quotes');
  return (
    <section>
      <h2>Rates</h2>
      <Failure error={rates.error} />
      <table>
        <thead>
          <tr>
            <th>Pair</th>
            <th>Rate</th>
            <th>Client</th>
            <th>Valid from</th>
            <th>Expires</th>
          </tr>
        </thead>
        <tbody>
          {(rates.data?.data ?? []).map((r: any) => (
            <tr key={r.rateId}>
              <td>
                {r.base}/{r.quote}
              </td>
              <td class="num">{r.rate}</td>
              <td class="mono">{r.clientId ?? 'all'}</td>
              <td>{time(r.validFrom)}</td>
              <td>{time(r.expiresAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Quotes</h2>
      <Failure error={quotes.error} />
      <table>
        <thead>
          <tr>
            <th>Quote</th>
            <th>Client</th>
            <th>Source</th>
            <th>Target</th>
            <th>Rate</th>
            <th>Expires</th>
            <th>Used by</th>
          </tr>
        </thead>
        <tbody>
          {(quotes.data?.data ?? []).map((q: any) => (
            <tr key={q.quoteId}>
              <td class="mono">{q.quoteId}</td>
              <td class="mono">{q.clientId}</td>
              <td class="num">{money(q.sourceAmountMinor, q.sourceCurrency)}</td>
              <td class="num">{money(q.targetAmountMinor, q.targetCurrency)}</td>
              <td class="num">{q.rate}</td>
              <td>{time(q.expiresAt)}</td>
              <td class="mono">{q.usedByPaymentId ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
