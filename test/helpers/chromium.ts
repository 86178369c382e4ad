import { chromium, type Browser, type Page } from "playwright-core";
import { existsSync } from "node:fs";

/** Debian's Chromium for the browser tests (MAKINA_CHROMIUM overrides where it is). */
export function chromiumPath(): string {
  const path = process.env.MAKINA_CHROMIUM ?? ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
  if (!path) throw new Error("The browser tests need Chromium: apt-get install -y chromium (or set MAKINA_CHROMIUM).");
  return path;
}

/**
 * Chromium with one page (1200×1000) signed in to a relay's web application as `login`, on its first page once the
 * navigation shows. Close the browser when done.
 */
export async function signedInPage(relayUrl: string, login: string, password: string): Promise<{ browser: Browser; page: Page }> {
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
    page.setDefaultTimeout(30_000);
    await page.goto(relayUrl);
    await page.getByLabel("Login").fill(login);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    return { browser, page };
  } catch (err) {
    await browser.close();
    throw err;
  }
}
