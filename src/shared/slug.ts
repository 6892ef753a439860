/** The longest slug. */
export const SLUG_MAX = 100

/** A well-formed slug: 1–100 lowercase letters, digits and hyphens, with at least one letter. */
export const SLUG_PATTERN = /^(?=.*[a-z])[a-z0-9-]{1,100}$/

/**
 * The slug made from a name: lower case, accents removed (`ñ` → `n`), every other run of characters one `-`,
 * trimmed of hyphens, at most 100 characters; null when no letter is left (the caller names it `<kind>-<id>`).
 */
export function slugify(name: string): string | null {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, SLUG_MAX)
    .replace(/-+$/g, '')
  return /[a-z]/.test(slug) ? slug : null
}

/** `base` with the suffix `-<n>`, cut so that the whole stays within 100 characters. */
export function numberedSlug(base: string, n: number): string {
  const suffix = `-${n}`
  return `${base.slice(0, SLUG_MAX - suffix.length).replace(/-+$/g, '')}${suffix}`
}
