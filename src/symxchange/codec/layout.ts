/**
 * The layout of a complex type as the codec walks it: its elements in document order (the base type's
 * first) with the `xsd:choice` each belongs to, its attributes, and whether an `xsd:any` wildcard follows.
 * Compiled once per type from the mapping's complex types (the catalog's XSD facts, mapping.ts) and shared
 * by the encoders (encode.ts), the decoders (decode.ts) and the operation shapes (shapes.ts).
 */
import type { XsdAttribute, XsdElement, XsdGroup } from '../../catalog/symxchange/index.js';
import type { SymxMapping } from '../mapping.js';

/** The type of `Version_1`, the empty marker before a type's `xsd:any` wildcard. */
export const VERSION_TYPE = 'symxcommon:Version_Type';
/** The JSON name of the `xsd:any` wildcard after `Version_1` (spec: `_value_1: null`). */
export const WILDCARD_PROPERTY = '_value_1';

/** An element of a type, with the choice group it belongs to. */
export interface Slot {
  readonly element: XsdElement;
  readonly choice?: XsdGroup;
}

/** Elements of a type in document order with the choice group each belongs to (base type's first). */
export interface TypeLayout {
  readonly slots: readonly Slot[];
  readonly attributes: readonly XsdAttribute[];
  readonly hasWildcard: boolean;
  readonly choices: readonly XsdGroup[];
}

/** The layout of a complex type by name, compiled on first use. */
export type LayoutOf = (typeName: string) => TypeLayout;

/**
 * The layouts of the mapping's complex types, each compiled once.
 * @example compileLayouts(mapping)('symxcommon:CredentialsChoice').choices.length // 1
 */
export function compileLayouts(mapping: SymxMapping): LayoutOf {
  const layouts = new Map<string, TypeLayout>();
  function layoutOf(typeName: string): TypeLayout {
    const known = layouts.get(typeName);
    if (known) return known;
    const type = mapping.complexType(typeName);
    const base = type.base ? layoutOf(type.base) : undefined;
    const slots: Slot[] = [...(base?.slots ?? [])];
    let hasWildcard = base?.hasWildcard ?? false;
    const collect = (group: XsdGroup) => {
      for (const particle of group.particles) {
        if (particle.kind === 'element')
          slots.push(group.kind === 'choice' ? { element: particle, choice: group } : { element: particle });
        else if (particle.kind === 'any') hasWildcard = true;
        else collect(particle);
      }
    };
    if (type.content) collect(type.content);
    const layout: TypeLayout = {
      slots,
      attributes: [...(base?.attributes ?? []), ...type.attributes],
      hasWildcard,
      choices: [...new Set(slots.flatMap((slot) => (slot.choice ? [slot.choice] : [])))],
    };
    layouts.set(typeName, layout);
    return layout;
  }
  return layoutOf;
}
