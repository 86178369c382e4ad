import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { useApp } from "../app-context.js";
import type { Route } from "../router.js";
import { ConnectionBanner } from "./connection-banner.js";
import { Link } from "./link.js";
import { ThemeSwitch } from "./theme-switch.js";

const NAV: { href: string; label: string; pages: Route["page"][]; adminOnly?: boolean }[] = [
  { href: "/", label: "Overview", pages: ["overview"] },
  { href: "/machines", label: "Machines", pages: ["machines", "machine"] },
  { href: "/forge", label: "Forge", pages: ["forge"] },
  { href: "/stacks", label: "Stacks", pages: ["stacks", "stack", "stack-edit"] },
  { href: "/keys", label: "API keys", pages: ["keys"] },
  { href: "/usage", label: "Usage", pages: ["usage"] },
  { href: "/requests", label: "Requests", pages: ["requests", "request"] },
  { href: "/users", label: "People", pages: ["users"] },
  { href: "/alerts", label: "Alerts", pages: ["alerts"], adminOnly: true },
  { href: "/audit", label: "Audit log", pages: ["audit"], adminOnly: true },
];

/** The signed-in frame: navigation, organization, user menu, and whether live updates flow. */
export function Layout({ route, children }: { route: Route; children: ComponentChildren }) {
  const { session, events, signOut } = useApp();
  const [live, setLive] = useState(events.connected);
  useEffect(() => {
    setLive(events.connected);
    return events.onConnection(setLive);
  }, [events]);
  return (
    <div class="shell">
      {/* The first stop of the keyboard: straight to the page, past the navigation. */}
      <a class="skip-link" href="#content" onClick={(e) => {
        e.preventDefault();
        document.getElementById("content")?.focus();
      }}>
        Skip to content
      </a>
      <nav class="sidebar" aria-label="Main">
        <div class="brand">
          <span class="logo" aria-hidden="true">
            M
          </span>
          <span>Makina</span>
        </div>
        <ul>
          {NAV.filter((item) => !item.adminOnly || session.user.role === "admin").map((item) => (
            <li key={item.href}>
              <Link href={item.href} class={item.pages.includes(route.page) ? "active" : ""}>
                {item.label}
              </Link>
            </li>
          ))}
        </ul>
        <div class="sidebar-foot">
          <span class={`live ${live ? "on" : ""}`} title={live ? "Pages update by themselves" : "Reconnecting to the relay…"}>
            {live ? "Live" : "Reconnecting…"}
          </span>
        </div>
      </nav>
      <div class="main">
        <div class="topbar">
          <span class="org" title={`Organization ${session.org.slug}`}>
            {session.org.name}
          </span>
          <div class="user">
            <ThemeSwitch />
            <Link href="/account" testId="account-link">
              {session.user.login} <span class="role">{session.user.role}</span>
            </Link>
            <button type="button" class="button small secondary" onClick={signOut}>
              Sign out
            </button>
          </div>
        </div>
        <ConnectionBanner events={events} />
        <main id="content" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}
