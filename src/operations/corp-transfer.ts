/**
 * CorpTransferService: one corporate transfer by its key pair, with field selection.
 */
import { Type } from 'typebox';
import { isCalendarDate } from '../catalog/field-rules.js';
import { INT4_MAX, INT4_MIN, recordDef } from '../catalog/index.js';
import { schemaIds } from '../catalog/schemas.js';
import { recordNotFound, validationFailed } from '../contract/problems.js';
import { recordTree, type ReadPlan } from '../store/record-tree.js';
import { resolveSelection, type SelectorFlags } from './selection.js';
import { defineOperation, STAFF_CREDENTIALS } from './types.js';

const corpTransfer = recordDef('CorpTransfer');
/** Spec: the record is identified by GlobalSequenceDate plus GlobalSequence; both are always returned. */
const KEY_FIELDS = ['GlobalSequenceDate', 'GlobalSequence'];

/** The record's `SelectableFields` (a shared schema the catalog derives), typed as the spec shapes it. */
type SelectableFieldsOf<Name extends string> = { readonly [K in `IncludeAll${Name}Fields`]?: boolean } & {
  readonly [K in `${Name}Fields`]?: SelectorFlags;
};
const SelectableFields = Type.Unsafe<SelectableFieldsOf<'CorpTransfer'>>(Type.Ref(schemaIds.selectable(corpTransfer)));

/** The fields returned: without SelectableFields the whole record (docs/decisions.md), the key pair always. */
function planOf(selectable: SelectableFieldsOf<'CorpTransfer'> | undefined): ReadPlan {
  const includeAll = selectable === undefined || selectable.IncludeAllCorpTransferFields;
  return {
    record: corpTransfer,
    ...resolveSelection(corpTransfer, includeAll, selectable?.CorpTransferFields, KEY_FIELDS),
  };
}

export const getCorpTransferSelectFields = defineOperation({
  name: 'getCorpTransferSelectFields',
  family: 'P1',
  service: 'corptransfer',
  summary: 'One corporate transfer with the selected fields',
  scope: 'corptransfer:read',
  credentials: STAFF_CREDENTIALS,
  request: {
    CorpTransferGlobalSequenceDate: Type.String({ format: 'date', description: 'YYYY-MM-DD' }),
    CorpTransferGlobalSequence: Type.Integer({ minimum: INT4_MIN, maximum: INT4_MAX }),
    SelectableFields: Type.Optional(SelectableFields),
  },
  response: Type.Object({ CorpTransfer: Type.Ref('CorpTransfer') }, { additionalProperties: false }),
  readPlan: (body) => planOf(body.SelectableFields),
  async handle({ db }, body) {
    // The date format admits year 0000, which PostgreSQL cannot hold: say so instead of failing in SQL.
    if (!isCalendarDate(body.CorpTransferGlobalSequenceDate)) {
      throw validationFailed([
        { pointer: '/CorpTransferGlobalSequenceDate', detail: 'must be a calendar date from 0001-01-01 to 9999-12-31' },
      ]);
    }
    const found = await recordTree.read(db, planOf(body.SelectableFields), {
      global_sequence_date: body.CorpTransferGlobalSequenceDate,
      global_sequence: body.CorpTransferGlobalSequence,
    });
    if (!found) {
      throw recordNotFound(
        `No corporate transfer ${body.CorpTransferGlobalSequenceDate}/${body.CorpTransferGlobalSequence}`,
      );
    }
    return { CorpTransfer: found };
  },
});
