/**
 * Tracking records (ShareTracking, CollateralTracking, CollateralDocumentTracking): user-defined kinds
 * described as templates, filled into the catalog's numbered field families (UserChar1..20, …).
 */
import type { WireRecord } from '../store/records.js';
import { DATASET_AS_OF } from './dataset.js';
import { addMonths, type Random } from './random.js';

/** One user-defined tracking kind: which numbered fields it fills and with what. */
export interface TrackingTemplate {
  readonly type: number;
  readonly trackingCode: number;
  /** UserChar1, UserChar2, …: choices, or a generator for free-form values. */
  readonly chars?: readonly (readonly string[] | ((rng: Random) => string))[];
  /** UserAmount1, …: ranges. */
  readonly amounts?: readonly (readonly [number, number])[];
  /** UserCode1, …: choices. */
  readonly codes?: readonly (readonly number[])[];
  /** UserNumber1, …: ranges. */
  readonly numbers?: readonly (readonly [number, number])[];
  /** UserRate1, …: ranges. */
  readonly rates?: readonly (readonly [number, number])[];
  /** How many of UserDate1, … to fill with dates after the creation date. */
  readonly dates?: number;
  /** Months until the tracking record expires, when it does. */
  readonly expiresInMonths?: number;
}

/**
 * Fills the tracking fields a template names; the numbered families are the catalog's (UserChar1..20, …).
 * @example trackingValues(rng, template, 1, share.openDate) // a tracking record created after the share opened
 */
export function trackingValues(rng: Random, template: TrackingTemplate, locator: number, since: string): WireRecord {
  const creationDate = rng.dateBetween(since, DATASET_AS_OF);
  const values: WireRecord = {
    Locator: locator,
    Type: template.type,
    TrackingCode: template.trackingCode,
    CreationDate: creationDate,
    CreationTime: rng.timeOfDay(8, 17),
    ExpireDate: template.expiresInMonths ? addMonths(creationDate, template.expiresInMonths) : undefined,
    FmLastDate: rng.dateBetween(creationDate, DATASET_AS_OF),
    RecordChangeDate: rng.dateBetween(creationDate, DATASET_AS_OF),
    UserId: rng.int(1, 250),
  };
  template.chars?.forEach((choice, position) => {
    values[`UserChar${position + 1}`] = typeof choice === 'function' ? choice(rng) : rng.pick(choice);
  });
  template.amounts?.forEach((range, position) => (values[`UserAmount${position + 1}`] = rng.money(...range)));
  template.codes?.forEach((choices, position) => (values[`UserCode${position + 1}`] = rng.pick(choices)));
  template.numbers?.forEach((range, position) => (values[`UserNumber${position + 1}`] = rng.int(...range)));
  template.rates?.forEach((range, position) => (values[`UserRate${position + 1}`] = rng.rate(...range)));
  for (let position = 1; position <= (template.dates ?? 0); position += 1) {
    values[`UserDate${position}`] = rng.dateBetween(creationDate, addMonths(DATASET_AS_OF, 12));
  }
  return values;
}
