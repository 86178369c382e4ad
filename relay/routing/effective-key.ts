import type { BudgetLine } from "../limits/index.js";
import type { ApiKeyRecord, Organization } from "../store/index.js";

/**
 * A key as the gateway admits it: its organization's default limits where it sets none of its own, and the token
 * budgets its requests count against (its own, and its organization's, shared by all its keys).
 */
export function effectiveKey(key: ApiKeyRecord, org: Organization | undefined): ApiKeyRecord {
  let effective = key;
  if ((key.rpm === null || key.tpm === null) && org) effective = { ...key, rpm: key.rpm ?? org.defaultKeyRpm, tpm: key.tpm ?? org.defaultKeyTpm };
  if (key.budget || org?.budget) {
    const budgets: BudgetLine[] = [];
    if (key.budget) budgets.push({ scope: "key", id: key.id, orgId: key.orgId, ...key.budget });
    if (org?.budget) budgets.push({ scope: "org", id: org.id, orgId: org.id, ...org.budget });
    effective = { ...effective, budgets };
  }
  return effective;
}
