import type { RailCode } from '../config.ts';
import type { TransferResult, WireDestination, WireStatementLine } from '../rails/gateway/protocol.ts';
import type { BankStatementLine } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { randomId } from '../shared/ids.ts';

/**
 * The simulated bank's own books: a balance per currency, a statement where every booked debit or
 * credit is a line with its own id, and the transfers it has seen by reference. Changes that a real bank
 * makes later (settlement, a clearing-house return, a statement line that shows up late) are stored with
 * the instant they take effect and applied lazily against the clock on every read, so a manual clock
 * drives them without timers.
 */

/** A line of the simulated statement: the statement line of rails/rail.ts and the bank's own bookkeeping. */
export interface SimLine extends BankStatementLine {
  bookedAt: Date;
  visibleAt: Date;
  /** Place on the delivered statement; null until the line becomes visible. */
  position: number | null;
  /** For a bank-made double debit: the id of the line it copies. */
  duplicateOf: string | null;
}

export interface SimTransfer {
  reference: string;
  rail: RailCode;
  amountMinor: bigint;
  currency: string;
  destination: WireDestination;
  result: TransferResult;
  reasonCode: string | null;
  submittedAt: Date;
  /** A change the bank will make by itself. */
  next: { at: Date; result: 'settled' | 'returned' } | null;
}

/** The read side handed to tests and the control API, plus the one write a person makes: a credit. */
export interface BankSimLedger {
  balance(currency: string): bigint;
  /** Every booked line, including those not yet visible on the statement. */
  lines(): readonly SimLine[];
  /** Lines with this reference (a payout's debit, its return, a duplicate). */
  linesFor(reference: string): SimLine[];
  transfer(reference: string): SimTransfer | undefined;
  transfers(): readonly SimTransfer[];
  /** Books an incoming credit (a funding deposit, for example). */
  credit(input: { amountMinor: bigint; currency: string; reference: string }): SimLine;
}

export interface LineEffects {
  delayMs: number;
  duplicate: boolean;
}

export interface NewLine {
  direction: 'debit' | 'credit';
  amountMinor: bigint;
  currency: string;
  reference: string;
  narrative: string;
}

export interface SimLedger extends BankSimLedger {
  /** Books a line (and a bank-made copy when the effects say so); moves the balance at once. */
  book(line: NewLine): SimLine[];
  record(transfer: SimTransfer): void;
  /** Visible statement lines from position `since`, at most `limit`. */
  page(since: number, limit: number): { lines: SimLine[]; next: number };
  visibleCount(): number;
}

export interface SimLedgerDeps {
  clock: Clock;
  openingBalances: Record<string, bigint>;
  utcOffsetMinutes: number;
  /** Statement faults (delay, duplicate) that apply to a line about to be booked. */
  lineEffects: (reference: string) => LineEffects;
}

const RETURN_REASON = 'clearing_house_return';

export function formatDecimal(amountMinor: bigint): string {
  const sign = amountMinor < 0n ? '-' : '';
  const abs = amountMinor < 0n ? -amountMinor : amountMinor;
  return `${sign}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
}

export function toWireLine(line: SimLine): WireStatementLine {
  return {
    bankLineId: line.bankLineId,
    direction: line.direction,
    amountMinor: line.amountMinor.toString(10),
    currency: line.currency,
    valueDate: line.valueDate,
    reference: line.reference,
    raw: line.raw,
  };
}

export function createSimLedger(deps: SimLedgerDeps): SimLedger {
  const balances = new Map<string, bigint>(Object.entries(deps.openingBalances));
  const booked: SimLine[] = [];
  const statement: SimLine[] = [];
  const transfers = new Map<string, SimTransfer>();

  function localDate(at: Date): string {
    return new Date(at.getTime() + deps.utcOffsetMinutes * 60_000).toISOString().slice(0, 10);
  }

  function book(input: NewLine): SimLine[] {
    const now = deps.clock.now();
    const effects = deps.lineEffects(input.reference);
    const valueDate = localDate(now);
    const dc = input.direction === 'debit' ? 'D' : 'C';
    // The line's text without its own id: a bank-made copy is byte-identical to its original.
    const raw = `${valueDate};${dc};${formatDecimal(input.amountMinor)};${input.currency};${input.narrative};${input.reference}`;
    const visibleAt = new Date(now.getTime() + Math.max(0, effects.delayMs));
    const make = (duplicateOf: string | null): SimLine => ({
      bankLineId: randomId('bl'),
      direction: input.direction,
      amountMinor: input.amountMinor,
      currency: input.currency,
      valueDate,
      reference: input.reference,
      raw,
      bookedAt: now,
      visibleAt,
      position: null,
      duplicateOf,
    });
    const original = make(null);
    const made = effects.duplicate ? [original, make(original.bankLineId)] : [original];
    const delta = input.direction === 'debit' ? -input.amountMinor : input.amountMinor;
    for (const line of made) {
      booked.push(line);
      balances.set(line.currency, (balances.get(line.currency) ?? 0n) + delta);
    }
    release(now);
    return made;
  }

  /** Applies every change due by now: transfers moving on, then lines becoming visible. */
  function advance(): void {
    const now = deps.clock.now();
    for (const transfer of transfers.values()) {
      if (transfer.next === null || transfer.next.at.getTime() > now.getTime()) continue;
      const { result } = transfer.next;
      transfer.next = null;
      transfer.result = result;
      if (result === 'returned') {
        transfer.reasonCode = RETURN_REASON;
        book({
          direction: 'credit',
          amountMinor: transfer.amountMinor,
          currency: transfer.currency,
          reference: transfer.reference,
          narrative: 'DEVOLUCION CCE',
        });
      }
    }
    release(now);
  }

  // Statement positions are given in the order lines become visible, never at booking: a cursor past a
  // delayed line's booking must still deliver it once it shows up.
  function release(now: Date): void {
    const due = booked
      .filter((line) => line.position === null && line.visibleAt.getTime() <= now.getTime())
      .sort((a, b) => a.visibleAt.getTime() - b.visibleAt.getTime());
    for (const line of due) {
      line.position = statement.length;
      statement.push(line);
    }
  }

  return {
    book,
    record(transfer) {
      if (transfers.has(transfer.reference)) throw new Error(`transfer ${transfer.reference} recorded twice`);
      transfers.set(transfer.reference, transfer);
    },
    page(since, limit) {
      advance();
      const lines = statement.slice(since, since + limit);
      return { lines, next: since + lines.length };
    },
    visibleCount() {
      advance();
      return statement.length;
    },
    balance(currency) {
      advance();
      return balances.get(currency) ?? 0n;
    },
    lines() {
      advance();
      return [...booked];
    },
    linesFor(reference) {
      advance();
      return booked.filter((line) => line.reference === reference);
    },
    transfer(reference) {
      advance();
      return transfers.get(reference);
    },
    transfers() {
      advance();
      return [...transfers.values()];
    },
    credit(input) {
      advance();
      if (input.amountMinor <= 0n) throw new RangeError('a credit must be positive');
      const [line] = book({ ...input, direction: 'credit', narrative: 'ABONO' });
      return line!;
    },
  };
}
