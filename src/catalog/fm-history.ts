/**
 * File-maintenance history vocabulary: how a changed field of each kind is written to an FmHistory row.
 */
import type { FieldKind } from './fields.js';

/** Catalog kinds as the core's FM-history DataType codes, and the history fields that hold each kind. */
export const FM_DATA_TYPES: Readonly<Record<FieldKind, { dataType: number; oldField: string; newField: string }>> = {
  string: { dataType: 0, oldField: 'OldCharacter', newField: 'NewCharacter' },
  integer: { dataType: 1, oldField: 'OldNumber', newField: 'NewNumber' },
  date: { dataType: 2, oldField: 'OldDate', newField: 'NewDate' },
  money: { dataType: 3, oldField: 'OldMoney', newField: 'NewMoney' },
  rate: { dataType: 4, oldField: 'OldRate', newField: 'NewRate' },
};

/** FmType of a field change made through the API (spec issue: "FmType 1"). */
export const FM_TYPE_FIELD_CHANGE = 1;
