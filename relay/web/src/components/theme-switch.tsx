import { useState } from "preact/hooks";

export type Theme = "system" | "light" | "dark";

/** Where this browser keeps the person's choice. */
const KEY = "makina-theme";

/** The theme chosen in this browser; the system's when none was (or storage is refused). */
export function storedTheme(): Theme {
  try {
    const t = localStorage.getItem(KEY);
    return t === "light" || t === "dark" ? t : "system";
  } catch {
    return "system";
  }
}

/** Puts a theme on the page: light or dark as chosen, or following the system's (the stylesheet's light-dark colours). */
export function applyTheme(theme: Theme): void {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

/** The colour theme: the system's, light or dark; kept in this browser. */
export function ThemeSwitch() {
  const [theme, setTheme] = useState<Theme>(storedTheme);
  const choose = (next: Theme) => {
    setTheme(next);
    applyTheme(next);
    try {
      if (next === "system") localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, next);
    } catch {
      // Storage refused (a private window's policy): the choice holds for this page only.
    }
  };
  return (
    <select class="theme-switch" aria-label="Colour theme" value={theme} onChange={(e) => choose(e.currentTarget.value as Theme)}>
      <option value="system">System theme</option>
      <option value="light">Light</option>
      <option value="dark">Dark</option>
    </select>
  );
}
