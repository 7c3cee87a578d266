/**
 * Scale checks on PostgreSQL: a lookup must not slow down as the dataset grows (p99 at N accounts vs
 * at 10,000), and a deep page must cost what the first page costs (p99 of page K vs page 1).
 */
import { LONG_HISTORY_RECORDS, collateralNumberOf } from '../src/seed/generate.js';
import { parseAnswer, post } from './load.js';
import { measureScenario, type Measurement, type MeasurementSettings } from './measure.js';
import {
  WALK_OPERATION,
  WALK_PATH,
  cyclingOperation,
  nextPageBody,
  requestBody,
  valueAt,
  type Operation,
} from './scenarios.js';
import type { Target } from './targets.js';

/** The largest p99 ratio that passes. */
export const SCALE_LIMIT = 1.5;
/** Measurements the scale checks make: four per check, and a warm-up run per server of the first. */
export const SCALE_MEASUREMENTS = 10;
/** Accounts of the small dataset of the lookup check. */
export const SMALL_ACCOUNTS = 10_000;
/** The page the paging check aims for. */
const TARGET_PAGE = 1000;

export interface ScaleCheck {
  readonly name: string;
  readonly description: string;
  readonly baseline: Measurement;
  readonly subject: Measurement;
  /** p99 of the subject over p99 of the baseline; undefined when a measurement failed. */
  readonly ratio: number | undefined;
  readonly pass: boolean;
  readonly note?: string;
}

function p99(measurement: Measurement): number | undefined {
  return measurement.ok ? measurement.result.p99Ms : undefined;
}

function verdict(
  name: string,
  description: string,
  baseline: Measurement,
  subject: Measurement,
  note?: string,
): ScaleCheck {
  const [base, sub] = [p99(baseline), p99(subject)];
  // A p99 of 0 ms (below autocannon's 1 ms resolution) counts as 1 ms, so the ratio stays finite.
  const ratio = base === undefined || sub === undefined ? undefined : Math.max(sub, 1) / Math.max(base, 1);
  return {
    name,
    description,
    baseline,
    subject,
    ratio,
    pass: ratio !== undefined && ratio <= SCALE_LIMIT,
    ...(note ? { note } : {}),
  };
}

/**
 * Measures baseline and subject in turn, twice, and keeps each one's better run (lower p99): a background
 * event of the machine (a checkpoint, autovacuum after the update scenarios) then spoils at most one run
 * of each, not the comparison.
 */
async function alternately(
  baseline: () => Promise<Measurement>,
  subject: () => Promise<Measurement>,
): Promise<[Measurement, Measurement]> {
  const better = (a: Measurement, b: Measurement) => ((p99(b) ?? Infinity) < (p99(a) ?? Infinity) ? b : a);
  const [firstBaseline, firstSubject] = [await baseline(), await subject()];
  const [secondBaseline, secondSubject] = [await baseline(), await subject()];
  return [better(firstBaseline, secondBaseline), better(firstSubject, secondSubject)];
}

/** findByActiveCard p99 on the N-account dataset over its p99 on the 10,000-account dataset. */
export async function lookupScaleCheck(
  large: Target,
  small: Target,
  settings: MeasurementSettings,
): Promise<ScaleCheck> {
  const scenario = { name: 'findByActiveCard', parts: [{ operation: 'findByActiveCard', weight: 1 }] };
  // One discarded run each first: the small dataset's server has just started, and a cold start would
  // inflate its p99 (and the large one's too, when the scale checks run alone).
  await measureScenario(small, scenario, settings);
  await measureScenario(large, scenario, settings);
  const [baseline, subject] = await alternately(
    () => measureScenario(small, scenario, settings),
    () => measureScenario(large, scenario, settings),
  );
  return verdict(
    'lookup p99 vs dataset size',
    `findByActiveCard p99 at the full dataset / p99 at ${SMALL_ACCOUNTS.toLocaleString('en-US')} accounts`,
    baseline,
    subject,
  );
}

/** Follows the list's tokens from `start` to page 1,000 (or its last page); returns that page's request. */
async function deepestPage(target: Target, start: string): Promise<{ body: string; page: number }> {
  let deepest = { body: start, page: 1 };
  while (deepest.page < TARGET_PAGE) {
    const answer = await post(target.server.url, WALK_PATH, target.headers, deepest.body);
    const token = valueAt(parseAnswer(answer), 'Token');
    if (answer.status !== 200 || typeof token !== 'string' || token === '') break;
    deepest = { body: nextPageBody(start, token), page: deepest.page + 1 };
  }
  return deepest;
}

/** A target that is sent one request over and over. */
function repeating(target: Target, body: string): Target {
  const isRight = (answer: unknown) => Array.isArray(valueAt(answer, 'CollateralFmHistory'));
  const operation: Operation = cyclingOperation(WALK_OPERATION, WALK_PATH, 'CollateralFmHistory', [{ body, isRight }]);
  return { ...target, operations: new Map([[WALK_OPERATION, operation]]) };
}

/**
 * p99 of page 1,000 over p99 of page 1 of the long file-maintenance history every dataset has (account
 * 1's collateral). A note says so if the walk ended before page 1,000.
 */
export async function pagingScaleCheck(
  target: Target,
  password: string,
  settings: MeasurementSettings,
): Promise<ScaleCheck> {
  // Account 1's collateral has the long history in every dataset; pages of 5 make page 1,000 its last.
  const list = { collateralNumber: collateralNumberOf(1, 1), records: LONG_HISTORY_RECORDS };
  const pageSize = Math.max(1, Math.floor(list.records / TARGET_PAGE));
  const start = requestBody(password, {
    CollateralNumber: list.collateralNumber,
    PagingRequestContext: { NumberOfRecordsToReturn: pageSize },
  });
  const deepest = await deepestPage(target, start);
  const scenario = { name: `${WALK_OPERATION} page`, parts: [{ operation: WALK_OPERATION, weight: 1 }] };
  const [baseline, subject] = await alternately(
    () => measureScenario(repeating(target, start), { ...scenario, name: `${scenario.name} 1` }, settings),
    () =>
      measureScenario(
        repeating(target, deepest.body),
        { ...scenario, name: `${scenario.name} ${deepest.page}` },
        settings,
      ),
  );
  const note =
    deepest.page < TARGET_PAGE
      ? `reached page ${deepest.page} of ${TARGET_PAGE} of collateral ${list.collateralNumber}'s history ` +
        `(${list.records} records, ${pageSize} per page)`
      : undefined;
  return verdict(
    'page depth',
    `${WALK_OPERATION} p99 of page ${deepest.page} / p99 of page 1`,
    baseline,
    subject,
    note,
  );
}
