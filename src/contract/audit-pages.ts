/** How many audit events a page of the admin API holds: apart from admin.ts's schemas, so the CLI reads them without TypeBox. */

/** At most one page of audit events; an NDJSON answer streams every event instead. */
export const AUDIT_PAGE_MAXIMUM = 1000;
export const AUDIT_PAGE_DEFAULT = 100;
