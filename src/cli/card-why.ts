/**
 * @module cli/card-why
 * Why a card asks, as every text surface says it (`airlock run`'s terminal card, `airlock attach`'s card,
 * `airlock actions list`): the inspector's label said once. A card's reason that lists several asks already
 * names each ask's inspector as `[inspector] ` (gate/verdict.ts `combine`), so no label is put before it
 * again; a one-ask reason gets `inspector: ` before it.
 */

/** A card's why in two parts: `label` (the inspector, to show before `text` as `label: text`) or `null` when `text` names its inspectors itself. Pure; not escaped. */
export function whyParts(inspector: string, reason: string): { label: string | null; text: string } {
  const tag = `[${inspector}] `;
  if (reason.startsWith(tag)) return { label: inspector, text: reason.slice(tag.length) };
  if (reason.includes(tag)) return { label: null, text: reason };
  return { label: inspector, text: reason };
}

/** A card's why as one string: `inspector: reason` with the inspector's label said once ({@link whyParts}). Pure; not escaped. */
export function cardWhy(inspector: string, reason: string): string {
  const { label, text } = whyParts(inspector, reason);
  return label === null ? text : `${label}: ${text}`;
}
