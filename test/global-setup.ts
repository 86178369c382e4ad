import type { TestProject } from "vitest/node";
import { startPostgres } from "./helpers/postgres-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The PostgreSQL server every test file shares (each makes its own database on it). */
    postgresUrl: string;
  }
}

/** Starts one real PostgreSQL server for the whole run; test files make their own databases on it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide("postgresUrl", server.url);
  return () => server.stop();
}
