import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { envelopeOf, errorResponses, signedHeaders } from '../http/schema-helpers.ts';
import { beneficiaryHttpError } from './errors.ts';
import { toPublicBeneficiary } from './model.ts';
import { parsePageRequest } from './paging.ts';
import {
  AliasPatchBody,
  BeneficiaryIdParams,
  BeneficiaryListQuery,
  BeneficiaryObject,
  BeneficiaryPage,
  NewBeneficiaryBody,
} from './schemas.ts';
import type { BeneficiaryResult, BeneficiaryService } from './service.ts';
import { checkNewBeneficiary } from './validation.ts';

const TAGS = ['beneficiaries'];

/** The five /v2/beneficiaries routes: schema in, service call, envelope out. */
export function registerBeneficiaryRoutes(fastify: FastifyInstance, service: BeneficiaryService): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  const payloadOf = (result: BeneficiaryResult) => {
    if (!result.ok) throw beneficiaryHttpError(result.error);
    return toPublicBeneficiary(result.beneficiary);
  };

  app.post(
    '/v2/beneficiaries',
    {
      config: { auth: 'signed', bodyRoute: true },
      schema: {
        summary: 'Create beneficiary',
        description:
          'Stores a destination, frozen from now on. 409 while an ACTIVE beneficiary of this client has the same rail and account.',
        tags: TAGS,
        headers: signedHeaders({ body: true }),
        body: NewBeneficiaryBody,
        response: { 201: envelopeOf(BeneficiaryObject), ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const checked = checkNewBeneficiary(request.body);
      if (!checked.ok) throw httpError(400, checked.message);
      const payload = payloadOf(await service.create(request.auth!.clientId, checked.value));
      return enveloped(request, reply, payload, { code: 201 });
    },
  );

  app.get(
    '/v2/beneficiaries',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'List beneficiaries',
        description:
          'ACTIVE and INACTIVE, newest first (id descending), keyset paged: pass the nextCursor of a page as cursor; an empty page ends the walk.',
        tags: TAGS,
        headers: signedHeaders(),
        querystring: BeneficiaryListQuery,
        response: { 200: envelopeOf(BeneficiaryPage), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const page = parsePageRequest(request.query);
      if (!page.ok) throw httpError(400, page.message);
      const result = await service.list(request.auth!.clientId, page);
      return enveloped(request, reply, { ...result, data: result.data.map(toPublicBeneficiary) });
    },
  );

  app.get(
    '/v2/beneficiaries/:id',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'Read beneficiary',
        description: 'Also answers an archived (INACTIVE) beneficiary. Unknown id or another client’s: 404.',
        tags: TAGS,
        headers: signedHeaders(),
        params: BeneficiaryIdParams,
        response: { 200: envelopeOf(BeneficiaryObject), ...errorResponses(404) },
      },
    },
    async (request, reply) =>
      enveloped(request, reply, payloadOf(await service.get(request.auth!.clientId, request.params.id))),
  );

  app.patch(
    '/v2/beneficiaries/:id',
    {
      config: { auth: 'signed', bodyRoute: true },
      schema: {
        summary: 'Edit alias',
        description: 'Changes only the alias; any destination field in the body is ignored. INACTIVE: 404.',
        tags: TAGS,
        headers: signedHeaders({ body: true }),
        params: BeneficiaryIdParams,
        body: AliasPatchBody,
        response: { 200: envelopeOf(BeneficiaryObject), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const result = await service.rename(request.auth!.clientId, request.params.id, request.body.alias);
      return enveloped(request, reply, payloadOf(result));
    },
  );

  app.delete(
    '/v2/beneficiaries/:id',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'Archive beneficiary',
        description:
          'Soft delete: status INACTIVE, still readable, never revived; payments can no longer use it. Answers the whole ' +
          'beneficiary. Idempotent: archiving an archived beneficiary answers 200 with it unchanged.',
        tags: TAGS,
        headers: signedHeaders(),
        params: BeneficiaryIdParams,
        response: { 200: envelopeOf(BeneficiaryObject), ...errorResponses(404) },
      },
    },
    async (request, reply) =>
      enveloped(request, reply, payloadOf(await service.archive(request.auth!.clientId, request.params.id))),
  );
}
