import { Link } from "./link.js";
import type { ComponentChildren } from "preact";

/** A message about the whole page or form: an error, a warning or a success. */
export function Notice({ tone, children, testId }: { tone: "error" | "warn" | "ok" | "info"; children: ComponentChildren; testId?: string }) {
  return (
    <div class={`notice ${tone}`} role={tone === "error" ? "alert" : "status"} data-testid={testId}>
      {children}
    </div>
  );
}

/** What an empty list shows: what it is for, and the next step. */
export function EmptyState({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <h3>{title}</h3>
      {children}
    </div>
  );
}

/** A page's title row with its actions. */
export function PageHeader({ title, subtitle, children }: { title: string; subtitle?: ComponentChildren; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <div>
        <h1>{title}</h1>
        {subtitle && <p class="subtitle">{subtitle}</p>}
      </div>
      {children && <div class="actions">{children}</div>}
    </header>
  );
}

/** What a page about one thing shows when that thing cannot be read: there is none such (404), or why not, and the way back to the list. */
export function NotLoaded({ thing, error, back }: { thing: string; error: { status: number; message: string }; back: string }) {
  return (
    <EmptyState title={error.status === 404 ? `No such ${thing}` : `This ${thing} cannot be loaded`}>
      <p>{error.message}</p>
      <Link href={back}>All {thing}s</Link>
    </EmptyState>
  );
}

/** A page whose thing is being read: its place, said in words (not a blank page), until it comes. */
export function Loading({ thing }: { thing: string }) {
  return (
    <div class="loading-page" aria-busy="true" role="status" data-testid="loading">
      <span class="spinner" aria-hidden="true" /> Loading the {thing}…
    </div>
  );
}
