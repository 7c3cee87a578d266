/**
 * Every operation the service exposes, and the shared schemas their requests and responses reference.
 */
import type { TSchema } from 'typebox';
import { recordDef } from '../catalog/index.js';
import { recordSchema, selectorSchema } from '../catalog/schemas.js';
import { ProblemSchema } from '../http/problems.js';
import { getCorpTransferSelectFields } from './corp-transfer.js';
import { CredentialsSchema, NxAttributesSchema } from './envelope.js';
import { FINDBY_OPERATIONS } from './findby.js';
import { SHARE_UPDATE_OPERATIONS, SHARE_UPDATE_SCHEMAS } from './share-update.js';
import type { AnyOperation } from './types.js';

export const OPERATIONS: readonly AnyOperation[] = [
  ...FINDBY_OPERATIONS,
  getCorpTransferSelectFields,
  ...SHARE_UPDATE_OPERATIONS,
];

/** Records whose shapes appear on the wire, as shared schemas. */
const WIRE_RECORDS = ['CorpTransfer'].map(recordDef);

export const SHARED_SCHEMAS: readonly TSchema[] = [
  CredentialsSchema,
  NxAttributesSchema,
  ProblemSchema,
  ...WIRE_RECORDS.flatMap((record) => [recordSchema(record), selectorSchema(record)]),
  ...SHARE_UPDATE_SCHEMAS,
];
