/**
 * How the gateway answers each operation from a SymXchange 3.0 core, which has most of them under their own
 * names (docs/decisions.md, "Gateway mode"). Every step is a rewrite of a JSON request into another operation's
 * JSON request, read off the operations and the mapping, never written per operation:
 * - an operation the WSDLs lack is sent as the sibling it was derived from: what the sibling takes and the
 *   operation lacks is filled (`IncludeAll<Record>Fields` for an operation without selection; a search's
 *   Query and date bounds at the top level of the paged search), and an unpaged list is read page by page
 *   until the list maximum, as the store reads it;
 * - a client's page size is capped to the page maximum, as the store caps it (a core's page longer than
 *   that is refused when decoded);
 * - a single-record read whose selector names child lists its WSDL type cannot carry is sent as its
 *   `…FilterChildren` twin, whose type carries them;
 * - in a list of records, child lists the wire cannot select or filter are read per record with the
 *   record's `…FilterChildren` operation;
 * - the answer is then shaped as the store answers (read plan): every selected field, null when the core
 *   left it out, every selected child list, nothing else.
 */
import type { RecordDef } from '../catalog/index.js';
import { Problem } from '../contract/problems.js';
import type { AnyOperation } from '../operations/types.js';
import type { ReadPlan } from '../store/record-tree.js';
import type { SymxMapping } from '../symxchange/mapping.js';

type JsonObject = Record<string, unknown>;

/** One call of an operation at the core: its JSON request, its JSON answer. */
export type CallCore = (operation: AnyOperation, body: JsonObject) => Promise<JsonObject>;

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

export interface Forwarding {
  /** The answer of `operation` to `body`, from as many calls of the core's operations as it takes. */
  answer(operation: AnyOperation, body: JsonObject, call: CallCore): Promise<JsonObject>;
}

/** The JSON API's bounds, which the gateway's answers keep as the store's do. */
export interface ForwardingLimits {
  /** Unpaged lists stop here (and say so in hasReachedMaximumListSize). */
  readonly listMaximum: number;
  /** A page holds at most this many records. */
  readonly pageMaximum: number;
}

/**
 * @example const forwarding = createForwarding(OPERATIONS, codec.mapping, { listMaximum: 1000, pageMaximum: 1000 });
 */
export function createForwarding(
  operations: readonly AnyOperation[],
  mapping: SymxMapping,
  { listMaximum, pageMaximum }: ForwardingLimits,
): Forwarding {
  const byKey = new Map(operations.map((op) => [`${op.family}|${op.service}|${op.name}`, op]));
  const operationNamed = (like: AnyOperation, name: string) => byKey.get(`${like.family}|${like.service}|${name}`);

  /** The element names of the wire type of a request element (`SelectableFields`, `SearchFilter`). */
  function wireCarries(operation: AnyOperation, element: string): Set<string> {
    const request = mapping.complexType(mapping.wireOperation(operation).request.child.type);
    const found = request.content?.particles.find((p) => p.kind === 'element' && p.name === element);
    const type = found && found.kind === 'element' ? found.type : undefined;
    const names = new Set<string>();
    const visit = (typeName: string) => {
      const complex = mapping.complexType(typeName);
      if (complex.base) visit(complex.base);
      const walk = (particles: readonly unknown[]) =>
        particles.forEach((p) => {
          const particle = p as { kind: string; name?: string; particles?: readonly unknown[] };
          if (particle.kind === 'element') names.add(particle.name!);
          else if (particle.particles) walk(particle.particles);
        });
      walk(complex.content?.particles ?? []);
    };
    if (type && mapping.isComplexType(type)) visit(type);
    return names;
  }

  /** Child selectors and children filters of a body that `operation`'s wire request cannot carry. */
  function uncarried(operation: AnyOperation, body: JsonObject) {
    const selectable = isObject(body.SelectableFields) ? body.SelectableFields : undefined;
    const filter = isObject(body.SearchFilter) ? body.SearchFilter : undefined;
    const selectorsCarried = wireCarries(operation, 'SelectableFields');
    const filterCarried = wireCarries(operation, 'SearchFilter');
    const selectors = Object.keys(selectable ?? {}).filter(
      (name) => name.endsWith('SelectableFields') && !selectorsCarried.has(name),
    );
    const filters = Object.keys(filter ?? {}).filter(
      (name) => name.endsWith('ChildrenFilter') && !filterCarried.has(name),
    );
    return { selectors, filters };
  }

  /** A single record's FilterChildren twin, when `operation` is get<Record>SelectFields and it exists. */
  const filterChildrenTwin = (operation: AnyOperation) => operationNamed(operation, `${operation.name}FilterChildren`);

  /** Reads every page of a paged operation until the list maximum (plus one, which only says there are more). */
  async function allPages(paged: AnyOperation, body: JsonObject, recordName: string, call: CallCore) {
    const records: JsonObject[] = [];
    let token = '';
    do {
      const page = await call(paged, {
        ...body,
        PagingRequestContext: {
          NumberOfRecordsToReturn: listMaximum + 1 - records.length,
          ...(token ? { Token: token } : {}),
        },
      });
      const found = (page[recordName] as JsonObject[] | undefined) ?? [];
      records.push(...found);
      token = typeof page.Token === 'string' ? page.Token : '';
      // A core promising more but sending nothing would be asked forever.
      if (found.length === 0 && token !== '')
        throw new Problem(
          502,
          'CORE_BAD_RESPONSE',
          `The core sent an empty page of ${paged.name} with a token for another`,
        );
    } while (token !== '' && records.length <= listMaximum);
    return { records: records.slice(0, listMaximum), more: records.length > listMaximum };
  }

  /**
   * Child lists of listed records that the wire could not carry, read per record with the record's
   * FilterChildren operation and put into each record.
   */
  async function childListsPerRecord(
    operation: AnyOperation,
    plan: ReadPlan,
    body: JsonObject,
    records: JsonObject[],
    selectors: readonly string[],
    filters: readonly string[],
    call: CallCore,
  ): Promise<void> {
    const record = plan.record;
    const filterChildren = operationNamed(operation, `get${record.name}SelectFieldsFilterChildren`);
    if (!filterChildren) throw new Error(`${record.name} has no FilterChildren operation for its child lists`);
    const selectable = (body.SelectableFields ?? {}) as JsonObject;
    const searchFilter = (body.SearchFilter ?? {}) as JsonObject;
    const childrenFilter = filters.length > 0 ? (searchFilter[filters[0]!] as JsonObject) : undefined;
    for (const listed of records) {
      const answer = await call(filterChildren, {
        Credentials: body.Credentials,
        CollateralNumber: body.CollateralNumber,
        [`${record.name}Locator`]: listed.Locator,
        SelectableFields: {
          [`${record.name}Fields`]: {},
          ...Object.fromEntries(selectors.map((name) => [name, selectable[name]])),
        },
        ...(childrenFilter ? { ChildrenSearchFilter: childrenFilter } : {}),
      });
      const withLists = (answer[record.name] ?? {}) as JsonObject;
      for (const child of plan.children ?? [])
        if (withLists[child.list] !== undefined) listed[child.list] = withLists[child.list];
    }
  }

  /** A body without the child selectors and children filters named, and with the Locator selected when a follow-up needs it. */
  function withoutUncarried(
    body: JsonObject,
    record: RecordDef,
    selectors: readonly string[],
    filters: readonly string[],
  ) {
    const next: JsonObject = { ...body };
    if (selectors.length > 0 || filters.length > 0) {
      const selectable = { ...((body.SelectableFields ?? {}) as JsonObject) };
      for (const name of selectors) delete selectable[name];
      const flags = `${record.name}Fields`;
      if (selectable[`IncludeAll${record.name}Fields`] !== true)
        selectable[flags] = { ...((selectable[flags] ?? {}) as JsonObject), Locator: true };
      next.SelectableFields = selectable;
    }
    if (filters.length > 0) {
      const searchFilter = { ...((body.SearchFilter ?? {}) as JsonObject) };
      for (const name of filters) delete searchFilter[name];
      next.SearchFilter = searchFilter;
    }
    return next;
  }

  /** The records of an answer, wherever the shape puts them: one record, a list, or a page. */
  function recordsOf(answer: JsonObject, recordName: string): JsonObject[] {
    const value = answer[recordName] ?? (answer[`${recordName}List`] as JsonObject | undefined)?.[recordName];
    if (Array.isArray(value)) return value as JsonObject[];
    return isObject(value) ? [value] : [];
  }

  async function fromCore(operation: AnyOperation, body: JsonObject, plan: ReadPlan, call: CallCore) {
    const record = plan.record;
    const derivedFrom = mapping.wireOperation(operation).derivedFrom;
    const sibling = derivedFrom ? operationNamed(operation, derivedFrom) : undefined;
    if (derivedFrom && !sibling) throw new Error(`${operation.name}: no operation ${derivedFrom}`);
    // A single record whose child selectors its WSDL type lacks: the FilterChildren twin carries them.
    const twin = sibling ? undefined : filterChildrenTwin(operation);
    if (twin && uncarried(operation, body).selectors.length > 0) return call(twin, body);
    const sent = sibling ?? operation;
    const request = sibling ? siblingBody(operation, sibling, body, record) : body;
    const { selectors, filters } = uncarried(sent, request);
    const trimmed = withoutUncarried(request, record, selectors, filters);
    let answer: JsonObject;
    if (sibling && `${record.name}List` in jsonProperties(operation.response)) {
      const { records, more } = await allPages(sibling, trimmed, record.name, call);
      answer = { [`${record.name}List`]: { hasReachedMaximumListSize: more, [record.name]: records } };
    } else {
      answer = await call(sent, trimmed);
    }
    if (selectors.length > 0 || filters.length > 0)
      await childListsPerRecord(operation, plan, request, recordsOf(answer, record.name), selectors, filters, call);
    return answer;
  }

  /** The sibling's request of an operation derived from it: what the sibling takes and the operation lacks, filled. */
  function siblingBody(
    operation: AnyOperation,
    sibling: AnyOperation,
    body: JsonObject,
    record: RecordDef,
  ): JsonObject {
    const next: JsonObject = { ...body };
    if ('SelectableFields' in sibling.request && !('SelectableFields' in operation.request))
      next.SelectableFields = { [`IncludeAll${record.name}Fields`]: true };
    // An unpaged search's SearchFilter: the paged search takes its Query (and date bounds) at the top level.
    if ('SearchFilter' in operation.request && !('SearchFilter' in sibling.request)) {
      const { SearchFilter, ...rest } = next;
      const filter = (SearchFilter ?? {}) as JsonObject;
      for (const [name, value] of Object.entries(filter)) if (name in sibling.request) rest[name] = value;
      const kept = Object.fromEntries(Object.entries(filter).filter(([name]) => !(name in sibling.request)));
      return Object.keys(kept).length > 0 ? { ...rest, SearchFilter: kept } : rest;
    }
    return next;
  }

  /** A body whose page size is capped to the page maximum (spec: more than the maximum is capped to it). */
  function pageSizeCapped(body: JsonObject): JsonObject {
    const paging = body.PagingRequestContext;
    if (!isObject(paging) || typeof paging.NumberOfRecordsToReturn !== 'number') return body;
    if (paging.NumberOfRecordsToReturn <= pageMaximum) return body;
    return { ...body, PagingRequestContext: { ...paging, NumberOfRecordsToReturn: pageMaximum } };
  }

  return {
    answer(operation, body, call) {
      try {
        // What the core's messages cannot carry is the operation's to answer (a share update's failed fields).
        const updateObject = operation.coreRequest && mapping.updateObject(operation);
        const forCore = operation.coreRequest?.(body as never, {
          release: mapping.facts.release.release,
          fields: updateObject?.fields,
        });
        if (forCore)
          return forCore.request
            ? call(operation, forCore.request).then((answer) => forCore.answer(answer))
            : Promise.resolve(forCore.answer(undefined));
        // The read plan checks the request's queries before any call (400 INVALID_QUERY costs the core nothing).
        const plan = operation.readPlan?.(body as never);
        // An operation the core answers as it is asked: its one call's answer is the answer.
        if (!plan) return call(operation, pageSizeCapped(body));
        return fromCore(operation, pageSizeCapped(body), plan, call).then((answer) => shapedAnswer(answer, plan));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };

  function jsonProperties(schema: unknown): Record<string, unknown> {
    return ((schema as { properties?: Record<string, unknown> }).properties ?? {}) as Record<string, unknown>;
  }
}

/** A record as the store answers it under `plan`: the planned fields (null when absent), the planned child lists. */
export function shapedRecord(record: JsonObject, plan: ReadPlan): JsonObject {
  const out: JsonObject = {};
  for (const field of plan.fields) {
    let value = record[field.name];
    const entries = plan.entryFilters?.get(field.name);
    if (field.repeating) {
      value = Array.isArray(value) ? value : [];
      if (entries) value = (value as { EntryId: number }[]).filter((entry) => entries.has(entry.EntryId));
    }
    out[field.name] = value ?? null;
  }
  for (const child of plan.children ?? []) {
    const list = isObject(record[child.list]) ? (record[child.list] as JsonObject) : {};
    const entries = (list[child.plan.record.name] as JsonObject[] | undefined) ?? [];
    out[child.list] = {
      hasReachedMaximumListSize: list.hasReachedMaximumListSize === true,
      [child.plan.record.name]: entries.map((entry) => shapedRecord(entry, child.plan)),
    };
  }
  return out;
}

/** Every record of an answer shaped by the plan, where the answer's shape puts them. */
function shapedAnswer(answer: JsonObject, plan: ReadPlan): JsonObject {
  const name = plan.record.name;
  const out: JsonObject = { ...answer };
  if (isObject(answer[name])) out[name] = shapedRecord(answer[name], plan);
  else if (Array.isArray(answer[name])) out[name] = (answer[name] as JsonObject[]).map((r) => shapedRecord(r, plan));
  const list = answer[`${name}List`];
  if (isObject(list)) {
    out[`${name}List`] = {
      hasReachedMaximumListSize: list.hasReachedMaximumListSize === true,
      [name]: ((list[name] as JsonObject[] | undefined) ?? []).map((r) => shapedRecord(r, plan)),
    };
  }
  return out;
}
