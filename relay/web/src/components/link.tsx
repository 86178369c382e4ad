import type { ComponentChildren } from "preact";
import { useApp } from "../app-context.js";

/** An in-app link: a real `<a href>` (open in a new tab works) that navigates without reloading. */
export function Link({ href, children, class: className, testId }: { href: string; children: ComponentChildren; class?: string; testId?: string }) {
  const { navigate } = useApp();
  return (
    <a
      href={href}
      class={className}
      data-testid={testId}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
