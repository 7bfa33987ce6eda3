import type { NewBeneficiary } from './model.ts';
import type { NewBeneficiaryBody } from './schemas.ts';

export type NewBeneficiaryResult = { ok: true; value: NewBeneficiary } | { ok: false; message: string };

/**
 * The rules that relate two fields of a schema-valid POST body (each field's own rule is in schemas.ts).
 * The account's format is deliberately not checked: the spec leaves that to the rail.
 */
export function checkNewBeneficiary(body: NewBeneficiaryBody): NewBeneficiaryResult {
  const name = body.beneficiaryName ?? null;
  if (body.rail === 'CCE') {
    if (name === null) return { ok: false, message: 'beneficiaryName is required with CCE' };
    if (body.bankCode !== body.account.slice(0, 4)) {
      return { ok: false, message: 'bankCode must equal the first 4 digits of account with CCE' };
    }
  }
  return {
    ok: true,
    value: {
      alias: body.alias,
      destination: {
        rail: body.rail,
        account: body.account,
        bankCode: body.bankCode,
        docType: body.docType,
        docNumber: body.docNumber,
        // Unused with PM (spec): ignored rather than refused, and not stored, so nothing suggests it is sent.
        beneficiaryName: body.rail === 'CCE' ? name : null,
      },
    },
  };
}
