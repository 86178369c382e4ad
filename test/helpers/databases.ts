import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import type { DatabaseLocation } from "../../relay/store/index.js";
import { createTestDatabase } from "./postgres-server.js";

/** The databases the relay runs on; store tests run on each. */
export const DIALECTS = ["sqlite", "postgres"] as const;

/** A new, empty database of this kind: a SQLite file in a temporary directory, or a database on the run's PostgreSQL server. */
export async function emptyDatabase(kind: (typeof DIALECTS)[number]): Promise<DatabaseLocation> {
  if (kind === "sqlite") return { kind, file: join(mkdtempSync(join(tmpdir(), "makina-store-")), "makina.db") };
  return { kind, url: await createTestDatabase(inject("postgresUrl")) };
}
