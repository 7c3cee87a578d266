/**
 * What a response may hold beyond what coregate asked for, and what decoding it says about that: its lists
 * of records held to `AnswerLists` (spec: lists stop at the maximum; a page too long is refused, since
 * cutting it would skip the records the next page does not repeat), and notes of what was skipped or cut,
 * for the log. The decoders (decode.ts) call it while decoding a response laxly; the codec (codec.ts) opens
 * the notes of each response it decodes.
 */
import { clip, type XmlElement } from '../xml.js';
import type { JsonObject } from './json.js';
import { violation } from './violations.js';

/** The bounds of a response's lists of records (the XSD's unbounded elements). */
export interface AnswerLists {
  /** A list longer than this is cut to it (spec: lists stop at the maximum). */
  readonly listMaximum: number;
  /** A page (an answer with a `Token`) longer than this is refused. */
  readonly pageMaximum: number;
}

/** What decoding a response passed over: for the log, never for the caller. */
export interface AnswerNotes {
  /** Elements and attributes the XSD does not declare, skipped, as `Type/name` (at most 20). */
  readonly unknown: readonly string[];
  /** Lists cut to the list maximum where the answer has no `hasReachedMaximumListSize` to say so, as `Type/name`. */
  readonly cut: readonly string[];
}

export interface Answers {
  /** The bounds of lists, if any (gateway mode); unbounded without. */
  readonly lists: AnswerLists | undefined;
  /** Runs a response's decoding, collecting what it skipped or cut (decoding is synchronous: one at a time). */
  noting<T>(decode: () => T): { readonly value: T; readonly notes?: AnswerNotes };
  /** Notes an element or attribute (`@name`) of `typeName` the XSD does not declare, skipped. */
  noteUnknown(typeName: string, name: string): void;
  /**
   * A response's list of records held to the bounds: cut to the list maximum (setting the object's
   * `hasReachedMaximumListSize` where it has one, noted otherwise), or refused when it is a page.
   */
  boundList(
    result: JsonObject,
    name: string,
    occurrences: XmlElement[],
    listFlag: boolean,
    page: boolean,
    typeName: string,
  ): void;
}

/** Undeclared elements and attributes noted per response at most. */
const NOTED_UNKNOWN = 20;

/**
 * The bounds and notes of the responses a codec decodes.
 * @example answers({ listMaximum: 100, pageMaximum: 50 }).noting(() => decode(child, scope)).notes
 */
export function answers(lists: AnswerLists | undefined): Answers {
  /** The notes of the response being decoded. */
  let notes: { unknown: string[]; cut: string[] } | undefined;
  return {
    lists,
    noting(decode) {
      notes = { unknown: [], cut: [] };
      try {
        const value = decode();
        return notes.unknown.length > 0 || notes.cut.length > 0 ? { value, notes } : { value };
      } finally {
        notes = undefined;
      }
    },
    noteUnknown(typeName, name) {
      if (notes && notes.unknown.length < NOTED_UNKNOWN) notes.unknown.push(`${typeName}/${clip(name)}`);
    },
    boundList(result, name, occurrences, listFlag, page, typeName) {
      if (page) {
        if (occurrences.length > lists!.pageMaximum)
          throw violation(`a page of more than ${lists!.pageMaximum} records, more than coregate asks for`, name);
        return;
      }
      if (occurrences.length <= lists!.listMaximum) return;
      occurrences.length = lists!.listMaximum;
      if (listFlag) result.hasReachedMaximumListSize = true;
      else notes?.cut.push(`${typeName}/${name}`);
    },
  };
}
