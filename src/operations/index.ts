/**
 * Every operation the service exposes, and the shared schemas their requests and responses reference.
 */
import type { TSchema } from 'typebox';
import { recordDef } from '../catalog/index.js';
import { readableRecordSchemas } from '../catalog/schemas.js';
import { ProblemSchema } from '../contract/problems.js';
import {
  COLLATERAL_OPERATIONS,
  COLLATERAL_RECORDS,
  COLLATERAL_SCHEMAS,
  COLLATERAL_WIRE_ONLY_OPERATIONS,
} from './collateral.js';
import { getCorpTransferSelectFields } from './corp-transfer.js';
import { CredentialsSchema, NxAttributesSchema } from '../contract/envelope.js';
import { FINDBY_OPERATIONS } from './findby.js';
import { SESSION_OPERATIONS } from './sessions.js';
import { SHARE_READ_OPERATIONS } from './share-read.js';
import { SHARE_UPDATE_OPERATIONS, SHARE_UPDATE_RECORDS, SHARE_UPDATE_SCHEMAS } from './share-update.js';
import type { AnyOperation } from './types.js';

export const OPERATIONS: readonly AnyOperation[] = [
  ...FINDBY_OPERATIONS,
  getCorpTransferSelectFields,
  ...SHARE_UPDATE_OPERATIONS,
  ...SHARE_READ_OPERATIONS,
  ...COLLATERAL_OPERATIONS,
  ...SESSION_OPERATIONS,
];

/**
 * The operations a core answers: the service's, and the WSDL operations the spec's JSON lacks, which the
 * SOAP face serves and the gateway sends (see COLLATERAL_WIRE_ONLY_OPERATIONS). They have no JSON route.
 */
export const CORE_OPERATIONS: readonly AnyOperation[] = [...OPERATIONS, ...COLLATERAL_WIRE_ONLY_OPERATIONS];

/** Records whose shapes appear on the wire, as shared schemas. */
const WIRE_RECORDS = [recordDef('CorpTransfer'), ...SHARE_UPDATE_RECORDS, ...COLLATERAL_RECORDS];

export const SHARED_SCHEMAS: readonly TSchema[] = [
  CredentialsSchema,
  NxAttributesSchema,
  ProblemSchema,
  ...WIRE_RECORDS.flatMap(readableRecordSchemas),
  ...SHARE_UPDATE_SCHEMAS,
  ...COLLATERAL_SCHEMAS,
];
