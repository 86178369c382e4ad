import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csvRecords } from "../helpers/csv.js";
import { chromiumPath } from "../helpers/chromium.js";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { hashPassword, hashSecret } from "../../relay/keys/index.js";
import { queryNvidiaGpus, systemLoadSource } from "../../agent/hardware/machine-load.js";
import { fixtureSource, SHARED_HARDWARE, standinNvidiaSmiEnv } from "../helpers/hardware-fixtures.js";
import { REPO_ROOT, testModelPath } from "../helpers/models.js";
import { OP } from "../helpers/operator.js";

/** Debian's chromium (`apt-get install -y chromium`; .ci/run installs it), or MAKINA_CHROMIUM. */

/** Every page's screenshot lands here, for a person to look at. */
const SHOTS = join(REPO_ROOT, "test-output", "screenshots");

// The specification's journey, as a newcomer takes it in a real browser against a real relay,
// a real agent (its hardware from the cpu-vm fixture, so the memory check does not depend on the
// machine running the test) and real inference on the tiny GGUF model.
describe("a newcomer's journey through the web application", () => {
  let dataDir: string;
  let relay: Relay;
  let agent: Agent | undefined;
  let browser: Browser;
  let page: Page;
  /** Every serious or critical accessibility violation axe-core found on a page screenshotted, by the screenshot's name. */
  const violations: { shot: string; id: string; impact: string; help: string; targets: string[] }[] = [];
  const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  /** Checks the page as it is with axe-core (WCAG 2 A and AA rules), then saves its screenshot. */
  const shot = async (name: string) => {
    // Evaluated through the browser's debugging protocol: the page's Content-Security-Policy refuses inline scripts.
    if ((await page.evaluate("typeof window.axe")) === "undefined") await page.evaluate(axeSource);
    const found = (await page.evaluate(`window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] }, resultTypes: ["violations"] })
      .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map((n) => String(n.target)) })))`)) as { id: string; impact: string; help: string; targets: string[] }[];
    for (const v of found) if (v.impact === "serious" || v.impact === "critical") violations.push({ shot: name, ...v });
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  };
  const nav = (label: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: label, exact: true }).click();
  /** Adds a person on the People page; resolves with the first password it shows them once. */
  const addPerson = async (login: string) => {
    await nav("People");
    await page.getByRole("button", { name: "Add person" }).click();
    await page.getByLabel("Login or email").fill(login);
    await page.getByRole("button", { name: "Add", exact: true }).click();
    await page.getByRole("heading", { name: `${login} can sign in now` }).waitFor();
    return (await page.locator(".copy-block code").textContent())!;
  };
  /** A page of a browser of its own (another person's), and how it signs in. */
  const otherBrowser = async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const other = await context.newPage();
    const signIn = async (login: string, password: string) => {
      await other.goto(relay.url);
      await other.getByLabel("Login").fill(login);
      await other.getByLabel("Password").fill(password);
      await other.getByRole("button", { name: "Sign in" }).click();
    };
    return { context, page: other, signIn };
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), "makina-web-"));
    // Alerts may go to a receiver on loopback (this test's), as MAKINA_ALERTS_ALLOW_PRIVATE=1 allows.
    relay = await startRelay(resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", heartbeatIntervalMs: 500, alertsAllowPrivate: true } }), { log: silentLogger() });
    const org = await relay.control.orgs.create(OP, { name: "Acme" });
    await relay.store.users.create({ orgId: org.id, login: "admin", passwordHash: await hashPassword("first-admin-password"), role: "admin" });
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    // A context of its own, so a second tab shares the first one's storage as a person's browser does.
    page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
    page.setDefaultTimeout(30_000);
  });
  afterAll(async () => {
    await browser?.close();
    await agent?.stop();
    await relay?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("signs in, adds a machine, builds and deploys a stack, chats, and manages a key through to its revocation", async () => {
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));

    // Sign in: a wrong password is said in words next to the field, then the right one gets in.
    await page.goto(relay.url);
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    // A first visit: nothing ended, so nothing says so.
    expect(await page.getByTestId("session-ended").count()).toBe(0);
    await shot("sign-in");
    await page.getByLabel("Login").fill("admin");
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toBe("The login or password is not right.");
    await shot("sign-in-error");
    await page.getByLabel("Password").fill("first-admin-password");
    await page.getByLabel("Password").press("Enter");
    // The first page is the overview: with no machine yet, it says what to do first.
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    await page.getByRole("heading", { name: "No machines yet" }).waitFor();
    await shot("overview-empty");

    // Add a machine: the page shows its values once, and waits until it comes online.
    await page.getByRole("button", { name: "Add your first machine" }).click();
    await page.getByLabel("Name").fill("gpu-box");
    await page.getByRole("button", { name: "Create machine" }).click();
    const machineId = (await page.getByTestId("new-machine-id").textContent())!;
    const token = (await page.getByTestId("new-machine-token").textContent())!;
    const server = (await page.getByTestId("new-machine-server").textContent())!;
    // The command holds no token (the script asks for it): the page shows the token beside it.
    const command = (await page.getByTestId("install-command").textContent())!;
    expect(command).toMatch(new RegExp(`/install.sh \\| sh -s -- .*--machine-id ${machineId}`));
    expect(command).not.toContain(token);
    expect(await page.locator("[data-testid=new-machine]").textContent()).toContain("it asks for the machine token below");
    await expect.poll(() => page.getByTestId("new-machine-status").textContent()).toContain("Waiting for gpu-box to connect");
    // This relay's link listens on loopback: the page says the command cannot work from another machine, and exactly
    // what to change (the link's host, and the address to print), naming no flag that changes nothing.
    const loopback = (await page.getByTestId("loopback-warning").textContent()) ?? "";
    expect(loopback).toContain("works on this computer only");
    expect(loopback).toContain("start the relay with MAKINA_GRPC_HOST=0.0.0.0 (makina relay --grpc-host 0.0.0.0)");
    expect(loopback).toContain("--public-address HOST (MAKINA_PUBLIC_ADDRESS)");
    expect(loopback).not.toContain("--host 0.0.0.0");
    await shot("add-machine");
    agent = await startAgent(resolveAgentConfig({ flags: { server, machineId, token, dataDir: join(dataDir, "agent"), threads: 1, gpu: false, maxContextSize: 1024 } }), {
      log: silentLogger(),
      hardwareSource: fixtureSource("cpu-vm"),
    });
    // No reload: the relay's event stream turns the page.
    await expect.poll(() => page.getByTestId("new-machine-status").textContent(), { timeout: 20_000 }).toContain("gpu-box is online");
    await shot("machine-online");
    await page.getByRole("button", { name: "Done" }).click();
    await expect.poll(() => page.getByTestId(`machine-row-${machineId}`).textContent()).toContain("online");
    await shot("machines");
    await page.getByRole("link", { name: "gpu-box" }).click();
    await page.getByRole("heading", { name: "Hardware" }).waitFor();
    // The agent's own log, read over its link and followed while the page is open.
    await expect.poll(() => page.getByTestId("machine-log").locator(".log-line").count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await shot("machine-detail");

    // The Forge: the compatibility panel answers every choice, and says why.
    await nav("Forge");
    const panel = page.getByTestId("compatibility");
    // Nothing chosen yet is nothing wrong: the panel waits for a model instead of opening red.
    await expect.poll(() => panel.textContent()).toContain("Runtime:");
    expect([await panel.getAttribute("data-verdict"), await page.getByTestId("forge-verdict").textContent()]).toEqual(["idle", "Choose a model: the panel checks it against the machine."]);
    await shot("forge-open");
    await page.getByRole("radio", { name: /vLLM/ }).check();
    await expect.poll(() => panel.textContent()).toContain("vLLM needs an NVIDIA GPU; none was detected on this machine.");
    expect(await panel.getAttribute("data-verdict")).toBe("fail");
    // Said at the choice it is about too, not only in the side panel.
    expect(await page.locator("#forge-runtime-error").textContent()).toContain("vLLM needs an NVIDIA GPU");
    await shot("forge-incompatible-runtime");
    await page.getByRole("radio", { name: /GGUF/ }).check();
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Llama 3.3 70B Instruct · Q4_K_M · 39.6 GiB" });
    await expect.poll(() => panel.textContent()).toContain("more than the machine's 23.5 GiB of RAM");
    await expect.poll(() => page.locator("#forge-model-error").textContent()).toContain("more than the machine's 23.5 GiB of RAM");
    expect(await page.locator("#forge-runtime-error").count()).toBe(0);
    // Each layer says what it does, before it is chosen.
    expect(await page.locator("#forge-harness-hint").textContent()).toBe("Requests reach the model as clients send them.");
    expect(await page.locator("#forge-orchestrator-hint").textContent()).toBe("One run of the model per answer.");
    // The context asked sizes the memory the panel counts: a larger one needs more.
    expect(await panel.textContent()).toContain("2 × 4,096 tokens");
    await page.getByLabel("Context size (tokens)").fill("16384");
    await expect.poll(() => panel.textContent()).toContain("2 × 16,384 tokens");
    await page.getByLabel("Context size (tokens)").fill("");
    await expect.poll(() => panel.textContent()).toContain("2 × 4,096 tokens");
    expect(await page.getByRole("button", { name: "Create and deploy" }).isDisabled()).toBe(true);
    await shot("forge-too-large");
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Custom: a path, URL or hf: reference…" });
    await page.getByLabel("Model reference").fill(testModelPath());
    // Another runtime starts from its own choice (a GGUF path means nothing to vLLM), and the path typed comes
    // back with GGUF.
    await page.getByRole("radio", { name: /vLLM/ }).check();
    await expect.poll(() => page.getByLabel("Model", { exact: true }).inputValue()).toBe("");
    expect(await page.locator("#forge-custom").count()).toBe(0);
    await page.getByRole("radio", { name: /GGUF/ }).check();
    await expect.poll(() => page.getByLabel("Model reference").inputValue()).toBe(testModelPath());
    await page.getByLabel("Model id").fill("tiny");
    // The machine reads the file's header (its first look loads node-llama-cpp there: a second or so).
    await expect.poll(() => panel.getAttribute("data-verdict"), { timeout: 20_000 }).not.toBe("fail");
    await expect.poll(() => panel.getAttribute("aria-busy")).toBe("false");
    // The panel says which APIs the stack will answer.
    expect(await panel.textContent()).toContain("for chat and embeddings");
    await shot("forge");
    const forgeMemory = await panel.locator('[data-topic="memory"]').textContent();
    expect(forgeMemory).toMatch(/MiB/);
    await page.getByRole("button", { name: "Create and deploy" }).click();

    // The stack's page follows the deploy live until it is deployed.
    await page.getByRole("heading", { name: "Deployment" }).waitFor();
    await expect.poll(() => page.getByTestId("deploy-steps").locator("li[data-state=succeeded]").count(), { timeout: 30_000 }).toBe(3);
    await page.getByRole("heading", { name: "Playground" }).waitFor();
    expect(await page.getByTestId("stack-model-id").textContent()).toBe("tiny");
    // Its page counts the memory the Forge counted: the same facts of the same file.
    expect(await page.getByTestId("compatibility").locator('[data-topic="memory"]').textContent()).toBe(forgeMemory);
    expect(await page.getByTestId("snippet-curl").textContent()).toContain(`${relay.url}/v1/chat/completions`);
    // The Python snippet runs as pasted: it imports what it uses, and quotes what it names.
    await page.getByRole("tab", { name: "Python" }).click();
    const python = (await page.getByTestId("snippet-python").textContent()) ?? "";
    expect(python).toMatch(/^import os\n/);
    expect(python).toContain(`base_url="${relay.url}/v1"`);
    expect(python).toContain('model="tiny"');
    await page.getByRole("tab", { name: "curl" }).click();
    // Snippets for each API the stack answers: a GGUF stack serves embeddings too, and the Anthropic clients.
    const apiTabs = page.getByRole("tablist", { name: "API" });
    await apiTabs.getByRole("tab", { name: "Embeddings" }).click();
    expect(await page.getByTestId("snippet-curl").textContent()).toContain(`${relay.url}/v1/embeddings`);
    await apiTabs.getByRole("tab", { name: "Anthropic Messages" }).click();
    expect(await page.getByTestId("snippet-curl").textContent()).toContain("x-api-key: $MAKINA_API_KEY");
    await apiTabs.getByRole("tab", { name: "Chat completions" }).click();
    // The runtime's log: what the model process said as it loaded, and the agent's lines about the stack.
    await expect.poll(() => page.getByTestId("stack-log").textContent(), { timeout: 10_000 }).toMatch(/gguf-server: loaded .+\.gguf/);
    expect(await page.getByTestId("stack-log").textContent()).toContain("endpoint configured");
    await shot("stack-deployed");

    // The playground streams the answer through the gateway.
    await page.getByRole("button", { name: "Create a playground key" }).click();
    await page.getByLabel("Message").fill("Once upon a time");
    // Counts how often the answer's text changes on screen: a streamed answer grows in many steps.
    await page.evaluate(`window.textUpdates = 0;
      new MutationObserver((records) => (window.textUpdates += records.length))
        .observe(document.querySelector("[data-testid=chat-log]"), { subtree: true, characterData: true, childList: true });`);
    await page.getByLabel("Message").press("Enter");
    await expect.poll(() => page.getByText(/completion tokens ·/).count(), { timeout: 30_000 }).toBe(1);
    const answer = (await page.locator(".bubble.assistant").textContent()) ?? "";
    expect(answer.trim().length).toBeGreaterThan(0);
    expect(await page.evaluate("window.textUpdates")).toBeGreaterThan(3);
    await shot("playground");
    // The same key compares two texts through /v1/embeddings: the two sentences about a cat are alike.
    const modes = page.getByRole("tablist", { name: "What to try" });
    await modes.getByRole("tab", { name: "Embeddings" }).click();
    await page.getByRole("button", { name: "Compare" }).click();
    await page.getByTestId("similarity").waitFor();
    const similarity = Number(/Cosine similarity ([-\d.]+)/.exec((await page.getByTestId("similarity").textContent()) ?? "")?.[1]);
    expect(similarity).toBeGreaterThan(0);
    expect(similarity).toBeLessThanOrEqual(1);
    await shot("playground-embeddings");
    await modes.getByRole("tab", { name: "Chat" }).click();
    // Another tab of this browser chats with the same key: one playground key per person and stack, limited, for a day.
    const playgroundKeys = async () => (await relay.control.keys.list(OP, (await relay.store.orgs.find("acme"))!.id)).filter((k) => k.name === "playground · admin");
    const secondTab = await page.context().newPage();
    await secondTab.goto(page.url());
    await secondTab.getByTestId("chat-log").waitFor();
    expect(await secondTab.getByRole("button", { name: "Create a playground key" }).count()).toBe(0);
    const [made] = await playgroundKeys();
    expect([(await playgroundKeys()).length, made!.rpm, made!.revokedAt]).toEqual([1, 60, null]);
    expect(made!.expiresAt! - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(made!.expiresAt! - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    // Forgotten in one tab, it is forgotten in the other; the next one made revokes the one before.
    await secondTab.getByRole("button", { name: "forget" }).click();
    await page.getByRole("button", { name: "Create a playground key" }).waitFor();
    await secondTab.getByRole("button", { name: "Create a playground key" }).click();
    await secondTab.getByTestId("chat-log").waitFor();
    await page.getByTestId("chat-log").waitFor();
    const after = await playgroundKeys();
    expect(after.filter((k) => k.revokedAt === null).map((k) => k.id)).not.toContain(made!.id);
    expect(after.filter((k) => k.revokedAt === null)).toHaveLength(1);
    await secondTab.close();

    // A key restricted to the stack, shown once; it works through the openai client until revoked in the UI.
    await nav("API keys");
    // Escape closes the form, as Cancel does.
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByTestId("create-key").waitFor();
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByTestId("create-key").count()).toBe(0);
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByLabel("Name").fill("support-bot");
    await page.getByRole("checkbox", { name: /tiny/ }).check();
    // Every limit that is wrong is said at once, in words next to its field; fixing them goes through.
    await page.getByLabel("Requests per minute").fill("0");
    await page.getByLabel("Tokens per minute").fill("12.5");
    await page.getByRole("button", { name: "Create key" }).last().click();
    await expect.poll(() => page.locator("#key-rpm-error").textContent()).toBe("Requests per minute must be a whole number of 1 or more, or empty for none.");
    expect(await page.locator("#key-tpm-error").textContent()).toBe("Tokens per minute must be a whole number of 1 or more, or empty for none.");
    await shot("key-form-error");
    await page.getByLabel("Requests per minute").fill("100");
    await page.getByLabel("Tokens per minute").fill("");
    // A batch job's key: its requests go after everyone else's.
    await page.getByLabel("Service tier").selectOption("flex");
    await page.getByRole("button", { name: "Create key" }).last().click();
    const secret = (await page.getByTestId("new-key-secret").textContent())!;
    expect(secret).toMatch(/^mk_live_/);
    // The one-time secret's panel has the focus: a screen reader says it, and the keyboard is there.
    await expect.poll(() => page.evaluate("document.activeElement && document.activeElement.id")).toBe("new-key-title");
    await shot("key-created");
    const client = new OpenAI({ baseURL: `${relay.url}/v1`, apiKey: secret, maxRetries: 0 });
    const reply = await client.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Hi" }], max_tokens: 4 });
    expect([reply.usage!.completion_tokens, reply.service_tier]).toEqual([4, "flex"]);
    await page.getByRole("button", { name: "Done" }).click();
    const keyRow = page.locator("tr", { hasText: "support-bot" });
    await expect.poll(() => keyRow.getByTestId("key-tier").textContent()).toBe("Flex tier");
    await expect.poll(() => keyRow.textContent()).toContain("stacks: tiny");
    await expect.poll(() => keyRow.textContent()).toContain("100 RPM");
    // Edited in place: a new limit and an expiry date, holding from the key's next request.
    await keyRow.getByRole("button", { name: "Edit support-bot" }).click();
    const editForm = page.getByTestId("edit-key");
    expect(await editForm.getByLabel("Requests per minute").inputValue()).toBe("100");
    await editForm.getByLabel("Requests per minute").fill("200");
    await editForm.getByLabel("Expires").fill("2999-12-31");
    // A budget of 50,000 tokens a day: what it spends shows beside it, and each answer says what is left.
    await editForm.getByLabel("Token budget").fill("50000");
    await editForm.getByLabel("Budget period").selectOption("day");
    await shot("key-edit");
    await editForm.getByRole("button", { name: "Save changes" }).click();
    await expect.poll(() => keyRow.textContent()).toContain("200 RPM");
    await expect.poll(() => keyRow.textContent()).toMatch(/expires \S*2999/);
    expect(await page.getByTestId("edit-key").count()).toBe(0);
    const limited = await client.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Hi" }], max_tokens: 1 }).withResponse();
    expect(limited.response.headers.get("x-ratelimit-limit-requests")).toBe("200");
    expect(Number(limited.response.headers.get("x-budget-remaining-tokens"))).toBeLessThan(50_000);
    await expect.poll(() => page.getByTestId(/^key-budget-/).first().textContent(), { timeout: 10_000 }).toMatch(/^[1-9]\d* of 50,000 tokens today$/);
    await keyRow.getByRole("button", { name: "Revoke…" }).click();
    await keyRow.getByRole("button", { name: "Revoke key" }).click();
    await expect.poll(() => keyRow.textContent()).toContain("revoked");
    // Done, and said so in a toast.
    await expect.poll(() => page.getByTestId("toast").last().textContent()).toContain("Key support-bot revoked: it is refused from its next request on.");
    await expect(client.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Hi" }], max_tokens: 4 })).rejects.toMatchObject({ status: 401, code: "invalid_api_key" });
    await shot("keys");
    // The organization's default limits, for keys that set none of their own.
    const defaults = page.getByTestId("default-limits");
    expect(await defaults.getByTestId("default-limits-value").textContent()).toBe("none");
    await defaults.getByRole("button", { name: "Change…" }).click();
    await defaults.getByLabel("Requests per minute").fill("0");
    await defaults.getByRole("button", { name: "Save defaults" }).click();
    await expect.poll(() => page.locator("#default-rpm-error").textContent()).toBe("Requests per minute must be a whole number of 1 or more, or empty for none.");
    await defaults.getByLabel("Requests per minute").fill("120");
    await defaults.getByRole("button", { name: "Save defaults" }).click();
    await expect.poll(() => defaults.getByTestId("default-limits-value").textContent()).toBe("120 RPM");
    // The organization's budget, shared by all its keys: shown here and on the Usage page.
    await defaults.getByRole("button", { name: "Change…" }).click();
    await defaults.getByLabel("Token budget").fill("5000000");
    await defaults.getByRole("button", { name: "Save defaults" }).click();
    await expect.poll(() => defaults.getByTestId("org-budget").textContent()).toMatch(/^[\d,]+ of 5,000,000 tokens this month$/);
    await shot("keys-defaults");

    // The usage page counts the calls, per key (the playground's embeddings too, under its model).
    await nav("Usage");
    const usageRow = page.locator("tr", { hasText: "support-bot" });
    // Three calls with it: one before the edit, one after, and one refused once it was revoked (counted as its own).
    await expect.poll(() => usageRow.locator("td").nth(1).textContent()).toBe("3");
    await page.getByRole("heading", { name: "Requests" }).waitFor();
    await expect.poll(() => page.getByTestId("usage-budget").textContent()).toMatch(/^[\d,]+ of 5,000,000 tokens this month$/);
    await shot("usage");
    await page.getByRole("button", { name: "Per model" }).click();
    await expect.poll(() => page.locator("tr", { hasText: "tiny" }).locator("td").nth(1).textContent()).toBe("4");

    await nav("Stacks");
    await expect.poll(() => page.locator("tr", { hasText: "tiny" }).textContent()).toContain("deployed");
    await shot("stacks");

    // The overview counts what runs and the requests just made, and shows the machine's load as its agent samples it.
    await nav("Overview");
    await expect.poll(() => page.getByTestId("stat-machines").textContent()).toContain("1 of 1");
    await expect.poll(() => page.getByTestId("stat-stacks").textContent()).toContain("1 of 1");
    // The playground's answer, and the key's calls, the one refused once it was revoked among them (counted as its own).
    await expect.poll(() => page.getByTestId("stat-errors").textContent()).toMatch(/\d of [45] in the last hour/);
    await page.getByRole("meter", { name: "CPU" }).waitFor();
    expect(await page.getByRole("img", { name: /requests in the last hour/ }).count()).toBe(1);

    // The machine's page shows the runtime it now runs and the model on its disk.
    await nav("Machines");
    await page.getByRole("link", { name: "gpu-box" }).click();
    await expect.poll(() => page.getByTestId("machine-runtimes").textContent()).toContain("ready");
    expect(await page.getByTestId("machine-runtimes").textContent()).toContain("tiny");
    await expect.poll(() => page.getByTestId("machine-models").textContent()).toContain("stories260K.gguf");
    await shot("machine-detail-deployed");
    // A deploy that fails says why on the stack's page, with a retry.
    await nav("Forge");
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Custom: a path, URL or hf: reference…" });
    // A path the machine does not have is said at once, at the field: the machine was asked.
    await page.getByLabel("Model reference").fill("/models/not-on-this-machine.gguf");
    await page.getByLabel("Model id").fill("missing");
    await expect.poll(() => page.locator("#forge-custom-error").textContent(), { timeout: 10_000 }).toBe("There is no file at /models/not-on-this-machine.gguf on this machine.");
    expect(await page.getByTestId("compatibility").getAttribute("data-verdict")).toBe("fail");
    expect(await page.getByRole("button", { name: "Create and deploy" }).isDisabled()).toBe(true);
    await shot("forge-missing-file");
    // A model from a host nobody can reach: nothing refuses it before the machine tries, and its deploy fails there.
    await page.getByLabel("Model reference").fill("https://models.invalid/tiny.gguf");
    await expect.poll(() => page.getByTestId("compatibility").getAttribute("data-verdict"), { timeout: 10_000 }).not.toBe("fail");
    await expect.poll(() => page.getByTestId("compatibility").getAttribute("aria-busy")).toBe("false");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await expect.poll(() => page.getByRole("alert").first().textContent(), { timeout: 20_000 }).toContain("The deploy failed:");
    expect(await page.getByRole("alert").first().textContent()).toContain("models.invalid");
    expect(await page.getByRole("button", { name: "Retry deploy" }).count()).toBe(1);
    await shot("stack-failed");

    // A model from a URL can be pinned to its SHA-256; without a pin the stack is marked unverified everywhere.
    await nav("Forge");
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Custom: a path, URL or hf: reference…" });
    await page.getByLabel("Model reference").fill("https://models.example/tiny.gguf");
    await page.getByLabel("Model id").fill("from-url");
    await page.getByLabel("SHA-256 of the file (recommended)").fill("not-a-digest");
    await expect.poll(() => page.getByTestId("compatibility").getAttribute("aria-busy")).toBe("false");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await expect.poll(() => page.locator("#forge-model-sha256-error").textContent()).toBe("model_sha256 is a SHA-256 digest: 64 hex digits.");
    await page.getByLabel("SHA-256 of the file (recommended)").fill("");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await page.getByRole("heading", { name: "Deployment" }).waitFor();
    expect(await page.getByTestId("stack-model").textContent()).toContain("unverified");
    await nav("Stacks");
    await expect.poll(() => page.locator("tr", { hasText: "from-url" }).textContent()).toContain("unverified");
    expect(await page.locator("tr", { hasText: "tiny" }).first().textContent()).not.toContain("unverified");
    await shot("stacks-unverified");

    // A harness layer with its options: the system prompt the stack puts in front of every request.
    await nav("Forge");
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Custom: a path, URL or hf: reference…" });
    await page.getByLabel("Model reference").fill(testModelPath());
    await page.getByLabel("Model id").fill("framed");
    await page.getByLabel("Harness").selectOption({ label: "System prompt" });
    expect(await page.locator("#forge-harness-hint").textContent()).toContain("Puts your system prompt");
    await expect.poll(() => page.getByTestId("compatibility").getAttribute("aria-busy")).toBe("false");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await expect.poll(() => page.locator("#forge-system-prompt-error").textContent()).toBe("System prompt must be a non-empty string.");
    await page.getByLabel("System prompt").fill("You tell stories about dragons.");
    // Once the field holds something else, the refusal of what it held goes.
    await expect.poll(() => page.locator("#forge-system-prompt-error").count()).toBe(0);
    await shot("forge-harness");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await page.getByRole("heading", { name: "Deployment" }).waitFor();
    await expect.poll(() => page.getByTestId("stack-harness").textContent()).toContain("system-prompt“You tell stories about dragons.”");

    // The router harness takes its rules as JSON; a rule the relay refuses is said next to them.
    await nav("Forge");
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Custom: a path, URL or hf: reference…" });
    await page.getByLabel("Model reference").fill(testModelPath());
    await page.getByLabel("Model id").fill("auto");
    await page.getByLabel("Harness").selectOption({ label: "Router" });
    await page.getByLabel("Routing rules (JSON)").fill('[{"model": "tiny", "pattern": "("}]');
    await page.getByLabel("Default model id").fill("framed");
    await expect.poll(() => page.getByTestId("compatibility").getAttribute("aria-busy")).toBe("false");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await expect.poll(() => page.locator("#forge-routes-error").textContent()).toContain("'harness_options.routes[0].pattern' is not a regular expression");
    await page.getByLabel("Routing rules (JSON)").fill('[{"model": "tiny", "pattern": "dragon"}]');
    await shot("forge-router");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await page.getByRole("heading", { name: "Deployment" }).waitFor();
    expect(await page.getByTestId("stack-harness").textContent()).toContain("router");

    // The tools harness, one call per answer.
    await nav("Forge");
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Custom: a path, URL or hf: reference…" });
    await page.getByLabel("Model reference").fill(testModelPath());
    await page.getByLabel("Model id").fill("agent");
    await page.getByLabel("Harness").selectOption({ label: "Tools" });
    await page.getByLabel("Tool calls").uncheck();
    // A context the relay refuses is said at its field, in the page's words.
    await page.getByLabel("Context size (tokens)").fill("64");
    await expect.poll(() => page.getByTestId("compatibility").getAttribute("aria-busy")).toBe("false");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await expect.poll(() => page.locator("#forge-max-context-error").textContent()).toBe("Context size must be a whole number of tokens from 128 to 1,048,576, or empty (the machine's default).");
    await page.getByLabel("Context size (tokens)").fill("768");
    await shot("forge-tools");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await page.getByRole("heading", { name: "Deployment" }).waitFor();
    await expect.poll(() => page.getByTestId("stack-harness").textContent()).toBe("toolsone call per answer");
    await expect.poll(() => page.getByTestId("stack-context").textContent(), { timeout: 20_000 }).toBe("768 tokens per request");

    // An orchestrator with its options: a vote of samples; a number out of range is said next to its field.
    await nav("Forge");
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Custom: a path, URL or hf: reference…" });
    await page.getByLabel("Model reference").fill(testModelPath());
    await page.getByLabel("Model id").fill("voted");
    await page.getByLabel("Orchestrator").selectOption({ label: "Vote" });
    await page.getByLabel("Samples").fill("12");
    await expect.poll(() => page.getByTestId("compatibility").getAttribute("aria-busy")).toBe("false");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await expect.poll(() => page.locator("#forge-samples-error").textContent()).toBe("Samples must be a whole number from 2 to 8.");
    await page.getByLabel("Samples").fill("3");
    await page.getByLabel("Sample temperature").fill("0.6");
    await shot("forge-orchestrator");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    await page.getByRole("heading", { name: "Deployment" }).waitFor();
    await expect.poll(() => page.getByTestId("stack-orchestrator").textContent()).toBe("votesamples 3 · temperature 0.6");
    await shot("stack-orchestrated");

    await page.getByRole("link", { name: "admin admin" }).click();
    await page.getByRole("heading", { name: "Change password" }).waitFor();
    await shot("account");
    // A wrong current password is said next to its field; the session stays signed in.
    await page.getByLabel("Current password").fill("not my password");
    await page.getByLabel("New password", { exact: true }).fill("another-admin-password");
    await page.getByLabel("New password again").fill("another-admin-password");
    await page.getByRole("button", { name: "Change password" }).click();
    await expect.poll(() => page.locator("#current-password-error").textContent()).toBe("The current password is not right.");
    await shot("account-wrong-password");
    await nav("Machines");
    await page.getByRole("heading", { name: "Machines", level: 1 }).waitFor();
    expect(pageErrors).toEqual([]);
  });

  it("adds a member in the People page, who sees the pages but no admin actions", async () => {
    const password = await addPerson("mo@acme.test");
    await shot("people");

    const { context, page: member, signIn } = await otherBrowser();
    await signIn("mo@acme.test", password);
    await member.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    await member.getByRole("article", { name: "gpu-box" }).getByRole("meter", { name: "CPU" }).waitFor();
    await member.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Machines" }).click();
    await expect.poll(() => member.locator("table").textContent()).toContain("gpu-box");
    expect(await member.getByRole("button", { name: "Add machine" }).count()).toBe(0);
    await member.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Forge" }).click();
    await member.getByRole("heading", { name: "Only admins build stacks" }).waitFor();
    await member.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Stacks" }).click();
    await member.getByRole("link", { name: "tiny" }).click();
    await member.getByRole("heading", { name: "Deployment" }).waitFor();
    expect(await member.getByRole("button", { name: "Undeploy" }).count()).toBe(0);
    await context.close();
  });

  it("offboards a person from the People page, each step confirmed, and shows who did what in the audit log", async () => {
    const password = await addPerson("leaver@acme.test");
    await page.getByRole("button", { name: "Done" }).click();

    const { context, page: leaver, signIn: signInAs } = await otherBrowser();
    const signIn = (pass: string) => signInAs("leaver@acme.test", pass);
    await signIn(password);
    await leaver.getByRole("heading", { name: "Overview", level: 1 }).waitFor();

    // Disabling asks first, in words, then signs the person out at once.
    const row = page.getByTestId("user-row-leaver@acme.test");
    await row.getByRole("button", { name: "Disable…" }).click();
    await expect.poll(() => row.textContent()).toContain("Disable leaver@acme.test? They are signed out at once");
    await shot("people-confirm-disable");
    await row.getByRole("button", { name: "Disable", exact: true }).click();
    await expect.poll(() => page.getByRole("status").first().textContent()).toContain("leaver@acme.test is disabled");
    await expect.poll(() => row.locator("[data-state]").getAttribute("data-state")).toBe("disabled");
    await shot("people-disabled");
    await leaver.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Stacks" }).click();
    await leaver.getByRole("button", { name: "Sign in" }).waitFor();
    // Not a bare sign-in page: it says the session ended, and who to ask.
    expect(await leaver.getByTestId("session-ended").textContent()).toContain("You were signed out: your session ended");
    await signIn(password);
    await expect.poll(() => leaver.getByRole("alert").textContent()).toBe("This account is disabled; ask an admin of your organization.");

    await row.getByRole("button", { name: "Enable" }).click();
    await expect.poll(() => row.locator("[data-state]").getAttribute("data-state")).toBe("active");
    await row.getByRole("button", { name: "Make admin…" }).click();
    await row.getByRole("button", { name: "Make admin", exact: true }).click();
    await expect.poll(() => row.textContent()).toContain("admin");
    await row.getByRole("button", { name: "Reset password…" }).click();
    await row.getByRole("button", { name: "Reset password", exact: true }).click();
    await page.getByRole("heading", { name: "leaver@acme.test's new password" }).waitFor();
    const reset = (await page.locator(".copy-block code").textContent())!;
    expect(reset).not.toBe(password);
    await page.getByRole("button", { name: "Done" }).click();
    await signIn(reset);
    await leaver.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    // An admin now: the audit log is in the navigation.
    expect(await leaver.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).count()).toBe(1);
    await row.getByRole("button", { name: "Delete…" }).click();
    await expect.poll(() => row.textContent()).toContain("This cannot be undone");
    await row.getByRole("button", { name: "Delete", exact: true }).click();
    await expect.poll(() => page.getByRole("status").first().textContent()).toContain("leaver@acme.test is deleted");
    await expect.poll(() => page.getByTestId("user-row-leaver@acme.test").count()).toBe(0);
    // One's own row offers nothing to do to oneself.
    expect(await page.getByTestId("user-row-admin").getByRole("button").count()).toBe(0);
    await shot("people");
    await context.close();

    await nav("Audit log");
    const audit = page.getByTestId("audit-table");
    await audit.waitFor();
    for (const action of ["user.created", "user.disabled", "user.enabled", "user.role_changed", "user.password_reset", "user.deleted", "sign_in"]) {
      expect(await page.getByTestId(`audit-${action}`).count(), action).toBeGreaterThan(0);
    }
    const deleted = page.getByTestId("audit-user.deleted").first();
    expect(await deleted.textContent()).toContain("Deleted a person");
    expect(await deleted.textContent()).toContain("leaver@acme.test");
    expect(await deleted.locator('td[data-label="Who"]').textContent()).toBe("admin");
    expect(await deleted.locator('td[data-label="From"]').textContent()).toMatch(/127\.0\.0\.1/);
    // The disabled person's refused sign-in is there, marked.
    expect(await page.getByTestId("audit-sign_in").filter({ hasText: "refused" }).filter({ hasText: "leaver@acme.test" }).count()).toBeGreaterThan(0);
    await shot("audit");
    await page.getByLabel("Show").selectOption({ label: "API keys" });
    await expect.poll(async () => {
      const rows = await page.getByTestId("audit-table").locator("tbody tr").allTextContents();
      return rows.length > 0 && rows.every((t) => /key\./.test(t));
    }).toBe(true);
    await page.getByLabel("Show").selectOption({ label: "Everything" });
  });

  it("adds an alert webhook on the Alerts page, shows its secret once, sends a test and lists its delivery", async () => {
    const got: { body: string; signature: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        got.push({ body, signature: String(req.headers["webhook-signature"]) });
        res.end("ok");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    try {
      await nav("Alerts");
      await page.getByRole("heading", { name: "No alerts yet" }).waitFor();
      await page.getByRole("button", { name: "Add webhook" }).click();
      const form = page.getByTestId("add-alert");
      await form.getByLabel("URL").fill(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/slack`);
      await form.getByLabel("Name").fill("#ops");
      await form.getByLabel("A token budget reaches 80% and 100%").check();
      // The thresholds of the events chosen, and only those.
      await form.getByLabel("Requests fail above a rate over 5 minutes").check();
      await form.getByLabel("Too many failures (percent of requests)").fill("25");
      await shot("alert-form");
      await form.getByRole("button", { name: "Add webhook" }).click();
      const secret = await page.getByTestId("new-alert").getByTestId("new-key-secret").locator("code").textContent();
      expect(secret).toMatch(/^whsec_/);
      await page.getByRole("button", { name: "Done" }).click();
      const row = page.getByTestId("alerts").locator("tr", { hasText: "#ops" });
      await expect.poll(() => row.textContent()).toContain("A token budget reaches 80% and 100%");
      await row.getByRole("button", { name: "Send test" }).click();
      await expect.poll(() => page.getByTestId("deliveries").locator("tbody tr").first().textContent(), { timeout: 10_000 }).toMatch(/alert\.test\s*delivered\s*1\s*200/);
      expect(got).toHaveLength(1);
      expect((await relay.store.alerts.list(null)).find((w) => w.name === "#ops")).toMatchObject({ errorRatePercent: 25, machineOfflineAfterS: 300 });
      expect(JSON.parse(got[0]!.body)).toMatchObject({ type: "alert.test", text: expect.stringContaining("#ops") });
      expect(got[0]!.signature).toMatch(/^v1,/);
      await shot("alerts");
    } finally {
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });

  it("shows a user of another organization nothing of this one", async () => {
    const rivals = await relay.control.orgs.create(OP, { name: "Rivals" });
    await relay.store.users.create({ orgId: rivals.id, login: "rival", passwordHash: await hashPassword("rival-password-1"), role: "admin" });
    const { context, page: rival, signIn } = await otherBrowser();
    await signIn("rival", "rival-password-1");
    await rival.getByRole("heading", { name: "No machines yet" }).waitFor();
    expect(await rival.locator(".topbar .org").textContent()).toBe("Rivals");
    await rival.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Stacks" }).click();
    await rival.getByRole("heading", { name: "No stacks yet" }).waitFor();
    await rival.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
    await rival.getByRole("heading", { name: "No API keys yet" }).waitFor();
    // Even a direct link to this organization's stack shows nothing of it.
    const stackId = (await relay.store.stacks.listByOrg((await relay.store.orgs.find("acme"))!.id))[0]!.id;
    await rival.goto(`${relay.url}/stacks/${stackId}`);
    await rival.getByRole("heading", { name: "No such stack" }).waitFor();
    expect(await rival.content()).not.toContain("tiny");
    await context.close();
  });

  it("lists the gateway's requests, refused ones too, filtered by status and key; a stack's page shows its last ones and keeps prompts only once told", async () => {
    const acme = (await relay.store.orgs.find("acme"))!;
    const limited = new OpenAI({ baseURL: `${relay.url}/v1`, apiKey: (await relay.control.keys.create(OP, acme.id, { name: "log-reader", rpm: 1 })).key, maxRetries: 0 });
    const hi = [{ role: "user" as const, content: "Hi" }];
    await limited.chat.completions.create({ model: "tiny", messages: hi, max_tokens: 2 });
    await expect(limited.chat.completions.create({ model: "tiny", messages: hi, max_tokens: 2 })).rejects.toMatchObject({ status: 429 });
    await expect(limited.chat.completions.create({ model: "no-such-model", messages: hi })).rejects.toMatchObject({ status: 404 });

    await nav("Requests");
    const table = page.getByRole("table", { name: "Requests" });
    const rows = table.locator("tbody tr");
    await expect.poll(() => rows.first().textContent()).toContain("No such model");
    expect(await rows.nth(1).textContent()).toContain("Over the key's requests per minute");
    expect(await rows.nth(1).textContent()).toContain("log-reader");
    expect(await rows.nth(2).locator("[data-state]").textContent()).toBe("200");
    await shot("requests");
    // Filtered by status, kept in the address.
    await page.getByLabel("Show requests by status").selectOption({ label: "Rate limited (429)" });
    await expect.poll(() => page.getByTestId("list-range").textContent()).toBe("1–1 of 1");
    expect(page.url()).toContain("state=429");
    await shot("requests-filtered");
    // The call made with a key just revoked is there, under that key: who still uses it is in sight.
    await page.getByLabel("Show requests by status").selectOption({ label: "Key refused (401)" });
    await expect.poll(() => rows.first().textContent()).toContain("support-bot");
    expect(await page.getByTestId("list-range").textContent()).toBe("1–1 of 1");
    await page.getByLabel("Show requests by status").selectOption({ label: "Every status" });
    // Which API each request called, and only one API's when asked.
    await expect.poll(() => rows.first().locator("td").nth(2).textContent()).toBe("Chat completions");
    await page.getByLabel("Show requests of API").selectOption({ label: "Messages (Anthropic)" });
    await expect.poll(() => page.getByText("No request matches.").count()).toBe(1);
    expect(page.url()).toContain("api=messages");
    await page.getByLabel("Show requests of API").selectOption({ label: "Every API" });

    // A key's requests, from its row on the keys page: the refused ones count among its requests.
    await nav("API keys");
    await page.locator("tr", { hasText: "log-reader" }).getByRole("link", { name: "3 requests" }).click();
    await expect.poll(() => page.getByTestId("key-filter").textContent()).toContain("log-reader");
    await expect.poll(() => page.getByTestId("list-range").textContent()).toBe("1–3 of 3");
    expect(page.url()).toContain("key=key_");
    // A request's page: no prompt kept, and why.
    await rows.last().getByRole("link").first().click();
    await page.getByRole("heading", { name: "Prompt and answer" }).waitFor();
    expect(await page.getByTestId("capture-none").textContent()).toContain("Not kept");
    // The machine by its name, not its id.
    await expect.poll(() => page.getByTestId("request-machine").textContent()).toBe("gpu-box");

    // On the stack's page: its last requests, and capture turned on for an hour.
    await nav("Stacks");
    await page.getByRole("link", { name: "tiny", exact: true }).click();
    await page.getByRole("heading", { name: "Recent requests" }).waitFor();
    await page.getByLabel("Capture prompts and answers").selectOption({ label: "Keep 1 hour" });
    await expect.poll(async () => (await relay.control.stacks.get(OP, (await relay.store.stacks.listByOrg(acme.id)).find((s) => s.name === "tiny")!.id)).captureHours).toBe(1);
    const writer = new OpenAI({ baseURL: `${relay.url}/v1`, apiKey: (await relay.control.keys.create(OP, acme.id, { name: "story-writer" })).key, maxRetries: 0 });
    const told = await writer.chat.completions.create({ model: "tiny", messages: [{ role: "system", content: "You tell short stories." }, { role: "user", content: "Tell me a story" }], max_tokens: 6 });
    const recent = page.getByRole("table", { name: "Recent requests" });
    await expect.poll(() => recent.locator("tbody tr").first().textContent(), { timeout: 15_000 }).toContain("story-writer");
    await shot("stack-requests");
    await recent.locator("tbody tr").first().getByRole("link").first().click();
    await expect.poll(() => page.getByTestId("capture-messages").textContent()).toContain("Tell me a story");
    expect(await page.getByTestId("capture-answer").textContent()).toContain(told.choices[0]!.message.content!.trim());
    // The conversation as it was, turn by turn, and which API it came through.
    expect(await page.getByTestId("capture-messages").locator(".turn-role").allTextContents()).toEqual(["System", "User", "Answer"]);
    expect([await page.getByTestId("request-api").textContent(), await page.getByTestId("request-tier").textContent()]).toEqual(["Chat completions", "Default"]);
    await shot("request-captured");
    // The same conversation again: the sequence that served it still holds its prompt, and the log says so.
    const again = await writer.chat.completions.create({ model: "tiny", messages: [{ role: "system", content: "You tell short stories." }, { role: "user", content: "Tell me a story" }], max_tokens: 6 });
    const cached = again.usage!.prompt_tokens_details!.cached_tokens!;
    expect(cached).toBeGreaterThan(0);
    await nav("Requests");
    await expect.poll(() => page.getByTestId("request-table").locator("tbody tr").first().textContent(), { timeout: 15_000 }).toContain(`${cached} cached`);
  });

  it("edits a deployed stack in the Forge, undeploys it only once confirmed, and deletes it", async () => {
    // An option the Forge has no field for (set through the API) survives an edit in the Forge.
    const framed = (await relay.store.stacks.listByOrg((await relay.store.orgs.find("acme"))!.id)).find((st) => st.modelId === "framed")!;
    await relay.control.stacks.update(OP, framed.id, { harnessOptions: { prompt: "You tell stories about dragons.", max_tokens: 50 } });
    await relay.deployer.settled(framed.id);
    // A new stack given a model id another serves is told, at the field, that they would share its requests.
    await nav("Forge");
    await page.getByLabel("Model", { exact: true }).selectOption({ label: "Custom: a path, URL or hf: reference…" });
    await page.getByLabel("Model reference").fill(testModelPath());
    await page.getByLabel("Model id").fill("framed");
    await expect.poll(() => page.locator("#forge-model-id-hint").textContent(), { timeout: 10_000 }).toMatch(/Also served by .+ \(deployed\): requests for it are shared\./);
    await nav("Stacks");
    await page.getByRole("link", { name: "framed" }).click();
    await page.getByRole("heading", { name: "Deployment" }).waitFor();
    await page.getByRole("link", { name: "Edit" }).click();
    await page.getByRole("heading", { name: "Edit framed" }).waitFor();
    // Every field as the stack has it; a deployed stack stays on its machine.
    expect(await page.getByLabel("Model reference").inputValue()).toBe(testModelPath());
    expect(await page.getByLabel("System prompt").inputValue()).toBe("You tell stories about dragons.");
    expect(await page.getByLabel("Machine", { exact: true }).isDisabled()).toBe(true);
    await page.getByLabel("System prompt").fill("You tell stories about cats.");
    await page.getByLabel("Stack name").fill("cat tales");
    await expect.poll(() => page.getByTestId("compatibility").getAttribute("aria-busy")).toBe("false");
    await shot("stack-edit");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("heading", { name: "cat tales" }).waitFor();
    // Redeployed with the new prompt: the runtime keeps serving, and the stack is deployed again.
    await expect.poll(() => page.getByTestId("stack-harness").textContent()).toContain("“You tell stories about cats.”");
    await expect.poll(() => page.locator(".page-header [data-state]").first().getAttribute("data-state"), { timeout: 30_000 }).toBe("deployed");
    expect((await relay.store.stacks.get(framed.id))!.harnessOptions).toEqual({ prompt: "You tell stories about cats.", max_tokens: 50 });

    // Made on demand (no restart): its page says so, and its model is unloaded and loaded again from there.
    await page.getByRole("link", { name: "Edit" }).click();
    await page.getByLabel("Loaded").selectOption("on_demand");
    // Judged by the machine's memory budget beside what stays loaded there (itself not among them).
    await expect.poll(() => page.getByTestId("compatibility").textContent()).toMatch(/Loaded on demand, it fits this machine's memory budget \([\d.]+ GiB, its agent's --memory-budget\) beside the [\d.]+ (MiB|GiB) its always-loaded stacks hold \(tiny \([\d.]+ MiB\)/);
    expect(await page.getByTestId("compatibility").textContent()).not.toMatch(/always-loaded stacks hold \([^)]*cat tales/);
    await shot("forge-on-demand-budget");
    await page.getByLabel("Unload after (seconds idle)").fill("900");
    await page.getByRole("button", { name: "Save changes" }).click();
    await expect.poll(() => page.getByTestId("stack-residency").textContent(), { timeout: 30_000 }).toContain("On demand: by its first request, unloaded after 900 s idle");
    await expect.poll(() => page.locator(".page-header [data-state]").first().getAttribute("data-state"), { timeout: 30_000 }).toBe("deployed");
    await page.getByRole("button", { name: "Unload now" }).click();
    await page.getByText("Its model is unloaded: the next request loads it").waitFor();
    await shot("stack-on-demand-unloaded");
    await page.getByRole("button", { name: "Load now" }).click();
    await page.getByRole("button", { name: "Unload now" }).waitFor();
    // A change that restarts the runtime is asked first.
    await page.getByRole("link", { name: "Edit" }).click();
    // A context the relay would refuse is said once the field is left, before anything is sent.
    await page.getByLabel("Context size (tokens)").fill("50");
    await page.getByLabel("Context size (tokens)").press("Tab");
    await expect.poll(() => page.locator("#forge-max-context-error").textContent()).toBe("A context is a whole number of tokens from 128 to 1,048,576, or empty for the machine's default.");
    await page.getByLabel("Context size (tokens)").fill("1024");
    await page.getByRole("button", { name: "Save and restart…" }).click();
    expect(await page.locator(".form-actions").textContent()).toContain("runtime restarts with these changes");
    await shot("stack-edit-restart-confirm");
    await page.getByRole("button", { name: "Save and restart", exact: true }).click();
    await page.getByRole("heading", { name: "cat tales" }).waitFor();
    // Deployed again unloaded (on demand): its context is known once a request has loaded it.
    await expect.poll(() => page.getByTestId("stack-context").textContent(), { timeout: 30_000 }).toContain("known once its model has loaded after this deploy (1,024 asked)");
    await page.getByText("Its model is unloaded: the next request loads it").waitFor();

    // Undeploy asks first; Escape, as Keep, keeps it serving.
    await page.getByRole("button", { name: "Undeploy…" }).click();
    await page.getByRole("button", { name: "Undeploy", exact: true }).waitFor();
    await page.keyboard.press("Escape");
    await page.getByRole("button", { name: "Undeploy…" }).waitFor();
    await page.getByRole("button", { name: "Undeploy…" }).click();
    expect(await page.locator(".page-header").textContent()).toContain("Requests for framed get 404 from now on");
    await shot("stack-undeploy-confirm");
    await page.getByRole("button", { name: "Keep" }).click();
    expect((await relay.store.stacks.listByOrg((await relay.store.orgs.find("acme"))!.id)).find((st) => st.name === "cat tales")?.state).toBe("deployed");
    expect(await page.getByRole("button", { name: "Delete…" }).count()).toBe(0);
    await page.getByRole("button", { name: "Undeploy…" }).click();
    await page.getByRole("button", { name: "Undeploy", exact: true }).click();
    await expect.poll(() => page.locator(".page-header [data-state]").first().getAttribute("data-state")).toBe("draft");
    // Undeployed, the page says so: no old deploy steps shown green, no runtime said ready.
    await page.getByTestId("undeployed").waitFor();
    expect(await page.locator(".steps").count()).toBe(0);
    expect(await page.locator("dd", { hasText: /^gguf/ }).first().textContent()).toBe("gguf");
    await page.getByRole("button", { name: "Delete…" }).click();
    await page.getByRole("button", { name: "Delete stack" }).click();
    await page.getByRole("heading", { name: "Stacks", level: 1 }).waitFor();
    await expect.poll(() => page.locator("tr", { hasText: "cat tales" }).count()).toBe(0);
    await shot("stacks-after-delete");
    // A link to a page that does not exist shows the app's own words, not an error body.
    await page.goto(`${relay.url}/stacks/nothing/here`);
    await page.getByRole("heading", { name: "There is no such page" }).waitFor();
    expect(await page.content()).not.toContain("unknown_url");
    await shot("not-found");
  });

  it("shows a GPU machine's load on the overview as it changes, and each machine's and stack's own figures on its page", async () => {
    // No GPU is reachable here: this agent's hardware is the recorded H100 server's, and its load comes from the
    // stand-in nvidia-smi of test/fixtures/standins, printing the recorded line with the memory and utilization given.
    const acme = (await relay.store.orgs.find("acme"))!;
    const { machine, token } = await relay.control.machines.create(OP, { org: acme.id, name: "h100-node" });
    const smiFile = join(dataDir, "nvidia-smi.csv");
    const recorded = readFileSync(join(SHARED_HARDWARE, "nvidia-h100.nvidia-smi.csv"), "utf8").trim().split(", ");
    const smiSays = (usedMiB: number, utilization: number) => writeFileSync(smiFile, `${recorded.map((f, i) => (i === 6 ? String(usedMiB) : i === 8 ? String(utilization) : f)).join(", ")}\n`);
    smiSays(61_440, 73);
    const smiEnv = standinNvidiaSmiEnv(smiFile);
    const h100 = await startAgent(
      resolveAgentConfig({ flags: { server: relay.linkAddress, machineId: machine.id, token, dataDir: join(dataDir, "agent-h100"), threads: 1, gpu: false, loadIntervalMs: 1000 } }),
      { log: silentLogger(), hardwareSource: fixtureSource("nvidia-h100"), loadSource: { ...systemLoadSource(), gpus: (signal) => queryNvidiaGpus(signal, smiEnv) } },
    );
    try {
      await nav("Overview");
      const card = page.getByRole("article", { name: "h100-node" });
      await expect.poll(() => card.getByTestId(`gpu-${machine.id}-0`).textContent(), { timeout: 20_000 }).toContain("GPU 0 · NVIDIA H100 80GB HBM3");
      const busy = card.getByRole("meter", { name: "GPU 0 busy" });
      await expect.poll(() => busy.getAttribute("aria-valuenow")).toBe("73");
      expect(await card.getByRole("meter", { name: "GPU 0 memory" }).getAttribute("aria-valuetext")).toBe("60.0 GiB of 79.6 GiB");
      await expect.poll(() => page.getByTestId("stat-gpus").textContent()).toContain("73% busy");
      // The first machine's memory budget for models, and what its loaded stacks count against it.
      const models = page.locator('[data-testid^="models-"]').filter({ hasText: "tiny" });
      expect(await models.getByRole("meter", { name: "Memory budget for models" }).getAttribute("aria-valuetext")).toMatch(/^[\d.]+ (MiB|GiB) of [\d.]+ GiB budget$/);
      expect(await models.getByRole("list", { name: /^Models loaded on / }).textContent()).toMatch(/tiny · [\d.]+ MiB/);
      await shot("overview");
      // The GPU gets busier: the page follows within seconds, without a reload.
      smiSays(79_000, 97);
      await expect.poll(() => busy.getAttribute("aria-valuenow"), { timeout: 20_000 }).toBe("97");
      expect(await busy.getAttribute("class")).toContain("high");

      // The machine's page: its own load and requests.
      await card.getByRole("link", { name: "h100-node" }).click();
      const figures = page.getByTestId("live-figures");
      await expect.poll(() => figures.getByRole("meter", { name: "GPU 0 busy" }).getAttribute("aria-valuenow"), { timeout: 20_000 }).toBe("97");
      await shot("machine-load");
      // A stack's page: its requests, latency and the runtime's speed; and a replica's share of its model id's requests.
      const tiny = (await relay.store.stacks.listByOrg(acme.id)).find((st) => st.name === "tiny")!;
      const copy = await relay.control.stacks.create(OP, { org: acme.id, name: "tiny-copy", machine: tiny.machineId, runtime: "gguf", model: tiny.modelRef, modelId: "tiny" });
      await relay.control.stacks.deploy(OP, copy.id);
      await relay.deployer.settled(copy.id);
      await nav("Stacks");
      await page.getByRole("link", { name: "tiny", exact: true }).click();
      const shares = page.getByTestId("replica-shares");
      await expect.poll(() => shares.textContent()).toMatch(/^This stack: 100% \([\d,]+\)tiny-copy: 0% \(0\)$/);
      expect(await page.getByTestId("stack-replicas").textContent()).toContain("Requests for tiny are shared: a loaded replica first (to load one, a machine with a place free and the most of its memory budget left)");
      await shot("stack-replicas");
      // Undeploying a replica says the other goes on serving the model id, before and after; nothing says 404.
      await page.goto(`${relay.url}/stacks/${copy.id}`);
      await page.getByRole("button", { name: "Undeploy…" }).click();
      expect(await page.locator(".page-header").textContent()).toContain("Undeploy? tiny goes on serving tiny.");
      await page.getByRole("button", { name: "Undeploy", exact: true }).click();
      await expect.poll(() => page.getByTestId("toast").last().textContent()).toContain("tiny goes on serving tiny.");
      expect(await page.getByTestId("toast").last().textContent()).not.toContain("404");
      await relay.deployer.settled(copy.id);
      await page.goto(`${relay.url}/stacks/${tiny.id}`);
      await relay.control.stacks.delete(OP, copy.id);
      await expect.poll(() => page.getByTestId("live-figures").getByTestId("stat-runtime-speed").textContent()).toMatch(/Runtime speed[\d,.]+ tok\/s/);
      expect(await page.getByTestId("live-figures").getByTestId("stat-errors").textContent()).toMatch(/of \d+ in the last hour/);
      await page.getByTestId("live-figures").scrollIntoViewIfNeeded();
      await shot("stack-figures");
    } finally {
      await h100.stop();
      await relay.control.machines.revoke(OP, machine.id);
      await relay.control.machines.delete(OP, machine.id);
    }
  });

  it("finds a key among many: searched, sorted and paged by the relay, the page kept in the address", async () => {
    const acme = (await relay.store.orgs.find("acme"))!;
    for (let i = 0; i < 120; i++) await relay.control.keys.create(OP, acme.id, { name: `ci-runner-${String(i).padStart(3, "0")}` });
    await nav("API keys");
    const range = page.getByTestId("list-range");
    await expect.poll(() => range.textContent()).toMatch(/^1–50 of 12\d$/);
    // 50 rows, not every key: the page stays a page.
    expect(await page.getByRole("table", { name: "API keys" }).locator("tbody tr").count()).toBe(50);
    expect(await page.evaluate("document.documentElement.scrollHeight")).toBeLessThan(6000);
    await page.getByRole("button", { name: "Next" }).click();
    await expect.poll(() => range.textContent()).toMatch(/^51–100 of 12\d$/);
    expect(page.url()).toContain("page=2");
    // Sorted by name, the other way on a second click; the header says how.
    await page.getByRole("button", { name: "Name", exact: true }).click();
    await expect.poll(() => page.locator("th[aria-sort]").getAttribute("aria-sort")).toBe("ascending");
    await page.getByRole("button", { name: /^Name/ }).click();
    await expect.poll(() => page.locator("th[aria-sort]").getAttribute("aria-sort")).toBe("descending");
    await expect.poll(() => page.getByRole("table", { name: "API keys" }).locator("tbody tr").first().textContent()).toContain("support-bot");
    // A search finds one key among them, and survives a reload.
    await page.getByRole("searchbox", { name: "Search keys" }).fill("runner-007");
    await expect.poll(() => range.textContent()).toBe("1–1 of 1");
    await shot("keys-search");
    await page.reload();
    await expect.poll(() => range.textContent()).toBe("1–1 of 1");
    expect(await page.getByRole("searchbox", { name: "Search keys" }).inputValue()).toBe("runner-007");
    await page.getByLabel("Show keys by state").selectOption({ label: "Revoked" });
    await expect.poll(() => range.textContent()).toBe("none");
    expect(await page.getByText("No key matches.").count()).toBe(1);
    await page.getByLabel("Show keys by state").selectOption({ label: "Every state" });
    await page.getByRole("searchbox", { name: "Search keys" }).fill("");
    await expect.poll(() => range.textContent()).toMatch(/^1–50 of 12\d$/);
  });

  it("finds a machine, a stack and a person among many, and restricts a key to one stack of many by searching", async () => {
    const acme = (await relay.store.orgs.find("acme"))!;
    const gpuBox = (await relay.store.machines.listByOrg(acme.id)).find((m) => m.name === "gpu-box")!;
    const racks: string[] = [];
    for (let i = 0; i < 60; i++) racks.push((await relay.control.machines.create(OP, { org: acme.id, name: `rack-${String(i).padStart(2, "0")}` })).machine.id);
    const extraStacks: string[] = [];
    for (let i = 0; i < 60; i++) {
      const s = await relay.control.stacks.create(OP, { org: acme.id, name: `batch-${String(i).padStart(2, "0")}`, machine: gpuBox.id, runtime: "gguf", model: testModelPath(), modelId: `batch-model-${i}` });
      extraStacks.push(s.id);
    }
    const passwordHash = await hashPassword("a-password-nobody-uses");
    for (let i = 0; i < 55; i++) await relay.store.users.create({ orgId: acme.id, login: `staff-${String(i).padStart(2, "0")}@acme.test`, passwordHash, role: "member" });
    try {
      const range = page.getByTestId("list-range");
      // Machines: 50 to a page, filtered by state, sorted by name, searched.
      await nav("Machines");
      await expect.poll(() => range.textContent()).toMatch(/^1–50 of 6\d$/);
      expect(await page.getByRole("table", { name: "Machines" }).locator("tbody tr").count()).toBe(50);
      await page.getByLabel("Show machines by state").selectOption({ label: "Never connected" });
      await expect.poll(() => range.textContent()).toMatch(/^1–50 of 6\d$/);
      // (The rows may come a frame after the count: CI once read the old rows beside the new count.)
      await expect.poll(() => page.getByRole("table", { name: "Machines" }).textContent()).not.toContain("gpu-box");
      await page.getByRole("button", { name: "Name", exact: true }).click();
      await page.getByRole("button", { name: /^Name/ }).click();
      await expect.poll(() => page.getByRole("table", { name: "Machines" }).locator("tbody tr").first().textContent()).toContain("rack-59");
      await page.getByRole("searchbox", { name: "Search machines" }).fill("rack-07");
      await expect.poll(() => range.textContent()).toBe("1–1 of 1");
      await shot("machines-search");
      await page.getByRole("searchbox", { name: "Search machines" }).fill("no-such-rack");
      await page.getByText("No machine matches.").waitFor();

      // Stacks: searched by model id, filtered by state, the view kept in the address.
      await nav("Stacks");
      await expect.poll(() => range.textContent()).toMatch(/^1–50 of 6\d$/);
      await page.getByRole("searchbox", { name: "Search stacks" }).fill("batch-model-42");
      await expect.poll(() => range.textContent()).toBe("1–1 of 1");
      await page.reload();
      await expect.poll(() => range.textContent()).toBe("1–1 of 1");
      expect(await page.getByRole("table", { name: "Stacks" }).textContent()).toContain("batch-42");
      await page.getByRole("searchbox", { name: "Search stacks" }).fill("");
      // The whole list again first: the search's own "1–1 of 1" would read as the filter's answer.
      await expect.poll(() => range.textContent()).toMatch(/^1–50 of 6\d$/);
      await page.getByLabel("Show stacks by state").selectOption({ label: "Deployed" });
      await expect.poll(() => range.textContent()).toMatch(/^1–\d of \d$/);
      await expect.poll(() => page.getByRole("table", { name: "Stacks" }).textContent()).not.toContain("batch-");
      await shot("stacks-filtered");

      // People: paged and searched, each row's actions as before.
      await nav("People");
      await expect.poll(() => range.textContent()).toMatch(/^1–50 of 5\d$/);
      const staff00 = (await relay.store.users.listByOrg(acme.id)).find((u) => u.login === "staff-00@acme.test")!;
      await relay.control.users.update(OP, staff00.id, { disabled: true });
      await page.getByLabel("Show people by state").selectOption({ label: "Disabled" });
      await expect.poll(() => range.textContent()).toMatch(/^1–\d of \d$/);
      expect(await page.getByRole("table", { name: "People" }).textContent()).toContain("staff-00@acme.test");
      expect(await page.getByRole("table", { name: "People" }).textContent()).not.toContain("staff-01@acme.test");
      await page.getByLabel("Show people by state").selectOption({ label: "Every state" });
      await page.getByRole("searchbox", { name: "Search people" }).fill("staff-3");
      await expect.poll(() => range.textContent()).toBe("1–10 of 10");
      await page.getByTestId("user-row-staff-33@acme.test").getByRole("button", { name: "Disable…" }).waitFor();
      await shot("people-search");

      // A key's stacks, chosen among 60 by searching: the choice shows as a chip, removable.
      await nav("API keys");
      await page.getByRole("button", { name: "Create key" }).click();
      const form = page.getByTestId("create-key");
      const stackChoices = page.getByTestId("key-stacks-choices");
      expect(await stackChoices.getByRole("checkbox").count()).toBeLessThan(60);
      await form.getByRole("searchbox", { name: "Find stacks" }).fill("batch-model-17");
      await expect.poll(() => stackChoices.getByRole("checkbox").count()).toBe(1);
      await stackChoices.getByRole("checkbox", { name: /batch-17/ }).check();
      await form.getByRole("searchbox", { name: "Find stacks" }).fill("batch-2");
      await stackChoices.getByRole("checkbox", { name: /batch-23/ }).check();
      expect(await form.getByRole("list", { name: "Chosen stacks" }).textContent()).toBe("batch-17×batch-23×");
      await form.getByRole("button", { name: "Remove batch-23" }).click();
      await form.getByRole("searchbox", { name: "Find machines" }).fill("rack-05");
      await page.getByTestId("key-machines-choices").getByRole("checkbox", { name: "rack-05" }).check();
      // The form stays a form: its restrictions take a few hundred pixels, not a page per stack.
      expect((await form.boundingBox())!.height).toBeLessThan(1100);
      await shot("key-form-restrictions");
      await form.getByLabel("Name").fill("one-stack-key");
      await form.getByRole("button", { name: "Create key" }).click();
      await page.getByTestId("new-key-secret").waitFor();
      const made = (await relay.control.keys.list(OP, acme.id)).find((k) => k.name === "one-stack-key")!;
      expect([made.stackIds, made.machineIds]).toEqual([[extraStacks[17]], [racks[5]]]);
      await page.getByRole("button", { name: "Done" }).click();
      await relay.control.keys.revoke(OP, made.id);
    } finally {
      for (const id of extraStacks) await relay.control.stacks.delete(OP, id);
      for (const id of racks) {
        await relay.control.machines.revoke(OP, id);
        await relay.control.machines.delete(OP, id);
      }
      for (const u of await relay.store.users.listByOrg(acme.id)) if (u.login.startsWith("staff-")) await relay.control.users.delete(OP, u.id);
    }
  });

  it("counts use as it happens: the usage page and a key's counters follow the gateway without a reload", async () => {
    const acme = (await relay.store.orgs.find("acme"))!;
    const { key, record } = await relay.control.keys.create(OP, acme.id, { name: "live-counter" });
    const client = new OpenAI({ baseURL: `${relay.url}/v1`, apiKey: key, maxRetries: 0 });
    const call = () => client.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 });
    await nav("Usage");
    await page.getByRole("heading", { name: "Requests" }).waitFor();
    expect(await page.getByTestId(`usage-row-${record.id}`).count()).toBe(0);
    await call();
    // Named by the relay, counted within seconds: no reload, no click.
    const row = page.getByTestId(`usage-row-${record.id}`);
    await expect.poll(() => row.locator("td").first().textContent(), { timeout: 20_000 }).toBe("live-counter");
    expect(await row.locator("td").nth(1).textContent()).toBe("1");
    await call();
    await expect.poll(() => row.locator("td").nth(1).textContent(), { timeout: 20_000 }).toBe("2");

    await nav("API keys");
    await page.getByRole("searchbox", { name: "Search keys" }).fill("live-counter");
    const counter = page.getByTestId(`key-usage-${record.id}`);
    await expect.poll(() => counter.textContent(), { timeout: 20_000 }).toContain("2 requests");
    await call();
    await expect.poll(() => counter.textContent(), { timeout: 20_000 }).toContain("3 requests");
    await page.getByRole("searchbox", { name: "Search keys" }).fill("");
    await relay.control.keys.revoke(OP, record.id);
    // Its waits (each up to 20 s on a loaded machine) add up to more than the default minute.
  }, 120_000);

  it("reads the usage of 300 keys on a desktop and a phone: totals paged, searched and summed by the relay, a chart in colours told apart with its values on hover and from the keyboard", async () => {
    const acme = (await relay.store.orgs.find("acme"))!;
    // 120 keys of an earlier test and 180 more; each is counted as the gateway counts a request (one more per key than the last).
    for (let i = 0; i < 180; i++) await relay.control.keys.create(OP, acme.id, { name: `usage-key-${String(i).padStart(3, "0")}` });
    const keys = (await relay.control.keys.list(OP, acme.id)).filter((k) => k.name?.startsWith("ci-runner-") || k.name?.startsWith("usage-key-"));
    expect(keys).toHaveLength(300);
    keys.forEach((k, i) => {
      for (let n = 0; n <= i % 40; n++) relay.usage.record({ orgId: acme.id, keyId: k.id, model: "tiny", promptTokens: 10, completionTokens: 5, failed: n === 0 && i % 10 === 0 });
    });
    await page.goto(`${relay.url}/usage`);
    const range = page.getByTestId("list-range");
    await expect.poll(() => range.textContent()).toMatch(/^1–50 of 30\d$/);
    expect(await page.getByRole("table", { name: "Usage totals" }).locator("tbody tr").count()).toBe(50);
    // The busiest first: at least the 40 requests the busiest of these keys made.
    const cell = (row: number, column: number) => page.getByRole("table", { name: "Usage totals" }).locator("tbody tr").nth(row).locator("td").nth(column).textContent();
    expect(Number((await cell(0, 1))!.replace(/,/g, ""))).toBeGreaterThanOrEqual(40);
    // The chart: eight keys and "all others", nine colours none of which repeats, in a light page and a dark one.
    const legend = page.getByRole("figure").first().getByTestId("legend-entry");
    expect(await legend.count()).toBe(9);
    expect(await legend.last().textContent()).toBe("all others");
    const colours = () => legend.locator(".swatch").evaluateAll((els) => els.map((e) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(e).backgroundColor));
    expect(new Set(await colours()).size).toBe(9);
    // A y-axis of round values, from 0 up to at least the busiest hour.
    const axis = await page.locator(".y-axis").first().locator("span").allTextContents();
    expect(axis.at(-1)).toBe("0");
    expect(axis).toHaveLength(5);
    // Pointing at the last hour says its total and each key's part; the arrow keys move through the hours.
    const requests = page.getByRole("group", { name: /^requests per hour/ });
    const box = (await requests.boundingBox())!;
    await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    const readout = requests.getByTestId("chart-readout");
    await expect.poll(() => readout.textContent()).toMatch(/^\d\d:00–\d\d:00: [\d,]+ requests/);
    // This hour holds every request seeded here, and the gateway's of earlier tests.
    const lastHour = (await readout.locator("strong").textContent())!;
    const seeded = keys.reduce((n, _k, i) => n + (i % 40) + 1, 0);
    expect(Number(/: ([\d,]+) requests$/.exec(lastHour)![1]!.replace(/,/g, ""))).toBeGreaterThanOrEqual(seeded);
    expect(await readout.textContent()).toContain("all others: ");
    await shot("usage-scale");
    await page.mouse.move(0, 0);
    await requests.focus();
    // The focus reads the last hour first; the left arrow the hour before it, End the last again.
    await expect.poll(() => readout.locator("strong").textContent()).toBe(lastHour);
    await page.keyboard.press("ArrowLeft");
    const hourBefore = `${String((Number(lastHour.slice(0, 2)) + 23) % 24).padStart(2, "0")}:00–${lastHour.slice(0, 2)}:00`;
    await expect.poll(() => readout.locator("strong").textContent()).toMatch(new RegExp(`^${hourBefore}: `));
    await page.keyboard.press("End");
    await expect.poll(() => readout.locator("strong").textContent()).toBe(lastHour);
    // Tab goes on to the tokens' chart, which reads its own last hour.
    await page.keyboard.press("Tab");
    await expect.poll(() => readout.count()).toBe(0);
    await expect.poll(() => page.getByRole("group", { name: /^tokens per hour/ }).getByTestId("chart-readout").textContent()).toMatch(/: [\d,]+ tokens/);
    // A search finds a key among 300 on the relay, and the sum is of what it found.
    await page.getByRole("searchbox", { name: "Search keys" }).fill("usage-key-007");
    await expect.poll(() => range.textContent()).toBe("1–1 of 1");
    expect(await page.getByTestId("usage-sum").textContent()).toMatch(/^The 1 matching key: \d+ requests/);
    await page.getByRole("searchbox", { name: "Search keys" }).fill("");
    await expect.poll(() => range.textContent()).toMatch(/^1–50 of 30\d$/);
    // Sorted by errors, most first on a second click.
    await page.getByRole("button", { name: /^Errors/ }).click();
    await page.getByRole("button", { name: /^Errors/ }).click();
    await expect.poll(() => page.locator("th[aria-sort]").getAttribute("aria-sort")).toBe("descending");
    await expect.poll(async () => Number(await cell(0, 2))).toBeGreaterThanOrEqual(1);
    expect(Number(await cell(0, 2))).toBeGreaterThanOrEqual(Number(await cell(1, 2)));
    await page.emulateMedia({ colorScheme: "dark" });
    const dark = await colours();
    expect(new Set(dark).size).toBe(9);
    await shot("usage-scale-dark");
    await page.emulateMedia({ colorScheme: "light" });
    // A phone: ten rows to a page, nothing sideways, the whole page a few screens tall rather than a hundred.
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${relay.url}/usage?by=key&range=24h`);
      await expect.poll(() => range.textContent()).toMatch(/^1–10 of 30\d$/);
      expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
      expect(await page.evaluate("document.documentElement.scrollHeight")).toBeLessThan(6000);
      await shot("usage-phone");
      // Per model: the chosen grouping is kept in the address.
      await page.getByRole("button", { name: "Per model" }).click();
      await expect.poll(() => page.url()).toContain("by=model");
      await expect.poll(() => page.getByTestId("usage-row-tiny").count()).toBe(1);
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
    for (const k of keys) if (k.name!.startsWith("usage-key-")) await relay.control.keys.revoke(OP, k.id);
  });

  it("regenerates a key's secret with a grace for the old one, and blocks and unblocks a key, from the keys page", async () => {
    const acme = (await relay.store.orgs.find("acme"))!;
    const { key: oldSecret, record } = await relay.control.keys.create(OP, acme.id, { name: "rotate-me" });
    const models = (secret: string) => fetch(`${relay.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } }).then((r) => r.status);
    await nav("API keys");
    await page.getByRole("searchbox", { name: "Search keys" }).fill("rotate-me");
    const row = page.getByTestId(`key-row-${record.id}`);
    // Less used actions are behind More, so a row keeps one line of buttons.
    await row.getByRole("button", { name: "More actions for rotate-me" }).click();
    await row.getByRole("button", { name: "Regenerate secret…" }).click();
    const panel = page.getByTestId("regenerate-key");
    await panel.getByLabel("The old secret keeps working").selectOption({ label: "15 minutes" });
    await shot("key-regenerate");
    await panel.getByRole("button", { name: "Regenerate" }).click();
    // The new secret is shown once, focused; the old one works for the time chosen.
    const secret = (await page.getByTestId("new-key-secret").textContent())!.trim();
    expect(secret).toMatch(/^mk_live_/);
    await expect.poll(() => page.evaluate("document.activeElement && document.activeElement.id")).toBe("regenerated-title");
    expect(await page.getByTestId("old-secret-until").textContent()).toMatch(/^The old secret keeps working until .+, then stops/);
    expect([await models(secret), await models(oldSecret)]).toEqual([200, 200]);
    await page.getByRole("button", { name: "Done" }).click();
    // Blocking is asked first; Escape keeps it serving.
    await row.getByRole("button", { name: "More actions for rotate-me" }).click();
    await row.getByRole("button", { name: "Block…" }).click();
    await page.keyboard.press("Escape");
    expect(await models(secret)).toBe(200);
    await row.getByRole("button", { name: "More actions for rotate-me" }).click();
    await row.getByRole("button", { name: "Block…" }).click();
    await row.getByRole("button", { name: "Block key" }).click();
    await expect.poll(() => row.locator("[data-state]").first().getAttribute("data-state")).toBe("blocked");
    expect([await models(secret), await models(oldSecret)]).toEqual([401, 401]);
    await shot("key-blocked");
    await row.getByRole("button", { name: "More actions for rotate-me" }).click();
    await row.getByRole("button", { name: "Unblock" }).click();
    await expect.poll(() => row.locator("[data-state]").first().getAttribute("data-state")).toBe("active");
    expect(await models(secret)).toBe(200);
    await page.getByRole("searchbox", { name: "Search keys" }).fill("");
    await relay.control.keys.revoke(OP, record.id);
  });

  it("searches the audit log by who, what and when, and downloads it and the request log as CSV that match the filtered rows", async () => {
    await page.goto(`${relay.url}/audit`);
    await page.getByTestId("audit-table").waitFor();
    // The key regenerated and blocked in the test before: its events, found by its name.
    await page.getByRole("searchbox", { name: "Done to" }).fill("rotate-me");
    // Made and revoked by the operator, regenerated, blocked and unblocked by the admin.
    await expect.poll(() => page.getByTestId("audit-table").locator("tbody tr").count()).toBe(5);
    expect(page.url()).toContain("target=rotate-me");
    await page.getByLabel("Show actions").selectOption({ label: "API keys" });
    await page.getByRole("searchbox", { name: "Who did it" }).fill("admin");
    await expect.poll(() => page.getByTestId("audit-table").locator("tbody tr").count()).toBe(3);
    const shown = await page.getByTestId("audit-table").locator("tbody tr td:nth-child(2) .mono").allTextContents();
    expect(shown).toEqual(["key.unblocked", "key.blocked", "key.regenerated"]);
    await shot("audit-search");
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("audit-export").click()]);
    const rows = csvRecords(readFileSync((await download.path())!, "utf8"));
    expect(rows.map((r) => r.action)).toEqual(shown);
    expect(download.suggestedFilename()).toMatch(/^audit-\d{4}-\d\d-\d\d\.csv$/);
    // A day range that ends before today finds none of them.
    await page.getByLabel("To", { exact: true }).fill("2020-01-01");
    await expect.poll(() => page.getByText("No event matches.").count()).toBe(1);

    // The request log: the 401s, exported as the page filters them.
    await page.goto(`${relay.url}/requests?state=401`);
    await page.getByRole("table", { name: "Requests" }).waitFor();
    await expect.poll(() => page.getByTestId("list-range").textContent()).toMatch(/ of [\d,]+$/);
    const total = Number(/of ([\d,]+)$/.exec((await page.getByTestId("list-range").textContent())!)![1]!.replace(/,/g, ""));
    expect(total).toBeGreaterThan(0);
    const [requests] = await Promise.all([page.waitForEvent("download"), page.getByTestId("requests-export").click()]);
    const logged = csvRecords(readFileSync((await requests.path())!, "utf8"));
    expect(logged.length).toBe(total);
    expect(new Set(logged.map((r) => r.status))).toEqual(new Set(["401"]));
  });

  it("renames a machine, rotates its token and revokes it from its page, each breaking step confirmed; deletes a machine that never joined", async () => {
    await nav("Machines");
    await page.getByRole("link", { name: "gpu-box" }).click();
    await page.getByRole("button", { name: "Rename…" }).click();
    await page.getByLabel("New name").fill("gpu-box-1");
    await page.getByRole("button", { name: "Save name" }).click();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("gpu-box-1");
    await expect.poll(() => page.getByTestId("toast").last().textContent()).toContain("Renamed to gpu-box-1.");
    await shot("toast");
    await page.getByTestId("toast").last().getByRole("button", { name: "Dismiss" }).click();
    // Rotating drops the machine's link: it is asked first, and Keep leaves the token as it was.
    const before = await relay.store.machines.tokenHash((await relay.store.machines.listByOrg((await relay.store.orgs.find("acme"))!.id))[0]!.id);
    await page.getByRole("button", { name: "Rotate token…" }).click();
    await shot("machine-rotate-confirm");
    await page.getByRole("button", { name: "Keep" }).click();
    expect(await relay.store.machines.tokenHash((await relay.store.machines.listByOrg((await relay.store.orgs.find("acme"))!.id))[0]!.id)).toBe(before);
    await page.getByRole("button", { name: "Rotate token…" }).click();
    await page.getByRole("button", { name: "Rotate token", exact: true }).click();
    const token = (await page.getByTestId("rotated-token-value").textContent())!;
    expect(token).toMatch(/^mk_mach_\w+$/);
    expect(await page.getByTestId("rotated-install-command").textContent()).not.toContain(token);
    expect(await relay.store.machines.tokenHash((await relay.store.machines.listByOrg((await relay.store.orgs.find("acme"))!.id))[0]!.id)).toBe(hashSecret(token));
    await expect.poll(() => page.locator(".page-header").textContent()).toContain("offline");
    await shot("machine-rotated");
    await page.getByRole("button", { name: "Done" }).click();
    await page.getByRole("button", { name: "Revoke…" }).click();
    await page.getByRole("button", { name: "Revoke machine" }).click();
    await expect.poll(() => page.locator(".page-header").textContent()).toContain("revoked");
    expect(await page.getByRole("button", { name: "Rotate token…" }).count()).toBe(0);
    // Revoked, it may be deleted, but not while a stack names it: the page says what to do first.
    await page.getByRole("button", { name: "Delete…" }).click();
    await page.getByRole("button", { name: "Delete machine" }).click();
    await expect.poll(() => page.locator(".notice").first().textContent()).toContain("delete them first");
    await page.getByRole("button", { name: "Keep" }).click();
    await nav("Machines");
    await expect.poll(() => page.locator("tr", { hasText: "gpu-box-1" }).textContent()).toContain("revoked");

    // A machine added and never joined goes for good.
    const acme = (await relay.store.orgs.find("acme"))!;
    const { machine: spare } = await relay.control.machines.create(OP, { org: acme.id, name: "never-joined" });
    await page.goto(`${relay.url}/machines/${spare.id}`);
    await page.getByRole("button", { name: "Delete…" }).click();
    await page.getByRole("button", { name: "Delete machine" }).click();
    await page.getByRole("heading", { name: "Machines", level: 1 }).waitFor();
    await expect.poll(() => page.locator("tr", { hasText: "never-joined" }).count()).toBe(0);
    expect(await relay.store.machines.get(spare.id)).toBeUndefined();
  });

  it("works in a narrow window: navigation stays reachable and nothing scrolls sideways", async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await nav("Overview");
    await page.getByTestId("stat-machines").waitFor();
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    // Each figure keeps to one line in its half-width card.
    for (const stat of await page.locator(".stat .stat-value").all()) {
      // An inline box has one rectangle per line it takes.
      const lines = await stat.evaluate((e) => (e as unknown as { getClientRects(): { length: number } }).getClientRects().length);
      expect([await stat.textContent(), lines]).toEqual([await stat.textContent(), 1]);
    }
    await shot("narrow-overview");
    await nav("Machines");
    await page.getByRole("heading", { name: "Machines" }).waitFor();
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    await shot("narrow-machines");
    await nav("API keys");
    await page.getByRole("table", { name: "API keys" }).waitFor();
    // Each row becomes a card: every cell within the window, under its column's name.
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    const lastDay = page.locator('td[data-label="Last 24 h"]').first();
    const box = (await lastDay.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(390);
    // The browser's own getComputedStyle: the cell's ::before shows its column's name.
    const style = (td: unknown) => (globalThis as unknown as { getComputedStyle(e: unknown, pseudo: string): { content: string } }).getComputedStyle(td, "::before").content;
    expect(await lastDay.evaluate(style)).toBe('"Last 24 h"');
    await shot("narrow-keys");
    for (const label of ["People", "Audit log", "Requests"]) {
      await nav(label);
      await page.getByRole("table", { name: label }).waitFor();
      expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), label).toBe(true);
      await shot(`narrow-${label.toLowerCase().replace(" ", "-")}`);
    }
    // A stack's page: the snippets' API and language tabs wrap within the window, and so does the capture choice.
    await nav("Stacks");
    await page.getByRole("table", { name: "Stacks" }).getByRole("link").first().click();
    await page.getByRole("heading", { name: "Call it from your code" }).waitFor();
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    const lastApi = (await page.getByRole("tablist", { name: "API" }).getByRole("tab").last().boundingBox())!;
    expect(lastApi.x + lastApi.width).toBeLessThanOrEqual(390);
    await page.getByRole("heading", { name: "Call it from your code" }).scrollIntoViewIfNeeded();
    await shot("narrow-stack");
    // The Forge's layer fields stack in one column.
    await nav("Forge");
    await page.getByLabel("Harness").selectOption({ label: "Tools" });
    await page.getByLabel("Orchestrator").selectOption({ label: "Vote" });
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    await page.getByLabel("Samples").scrollIntoViewIfNeeded();
    await shot("narrow-forge-layers");
    // The verdict comes before the button it decides.
    const verdict = (await page.getByTestId("forge-verdict").boundingBox())!;
    const submit = (await page.getByRole("button", { name: "Create and deploy" }).boundingBox())!;
    expect(verdict.y).toBeLessThan(submit.y);

    // Adding a machine: the command and the token wrap within the window.
    await nav("Machines");
    await page.getByRole("button", { name: "Add machine" }).click();
    await page.getByLabel("Name").fill("phone-added");
    await page.getByRole("button", { name: "Create machine" }).click();
    await page.getByTestId("new-machine-token").waitFor();
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    for (const id of ["new-machine-token", "install-command", "new-machine-id"]) {
      const b = (await page.getByTestId(id).boundingBox())!;
      expect(b.x + b.width, id).toBeLessThanOrEqual(390);
    }
    await shot("narrow-add-machine");
    await page.getByRole("button", { name: /^Close/ }).click();

    // Every key's actions are within reach, and the key form's restrictions fit the window.
    await nav("API keys");
    await page.getByRole("table", { name: "API keys" }).waitFor();
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByTestId("key-stacks-choices").waitFor();
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    const stackChoices = (await page.getByTestId("key-stacks-choices").boundingBox())!;
    expect(stackChoices.x + stackChoices.width).toBeLessThanOrEqual(390);
    await shot("narrow-key-form");
    await page.getByRole("button", { name: "Cancel" }).click();
    for (const button of await page.getByRole("button", { name: /^(Revoke…|Edit )/ }).all()) {
      const b = (await button.boundingBox())!;
      expect(b.x + b.width).toBeLessThanOrEqual(390);
    }

    // The usage chart's labels do not run into each other.
    await nav("Usage");
    await page.getByRole("heading", { name: "Requests" }).waitFor();
    const labels = await page.locator(".chart .axis span").evaluateAll((texts) =>
      texts.map((t) => {
        const r = (t as unknown as { getBoundingClientRect(): { left: number; right: number; top: number; bottom: number } }).getBoundingClientRect();
        return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
      }),
    );
    const overlapping = labels.filter((a, i) => labels.some((b, j) => j > i && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom));
    expect(labels.length).toBeGreaterThan(3);
    expect(overlapping).toEqual([]);
    // Readable: the labels keep their size however narrow the chart is drawn.
    expect(await page.locator(".chart .axis span").first().evaluate((e) => (e as unknown as { getBoundingClientRect(): { height: number } }).getBoundingClientRect().height)).toBeGreaterThan(10);
    await shot("narrow-usage");
  });

  it("says when the relay goes away and when it is back, and reads the page again", async () => {
    await page.setViewportSize({ width: 1280, height: 860 });
    await nav("Overview");
    await page.getByTestId("stat-machines").waitFor();
    expect(await page.getByTestId("connection-banner").count()).toBe(0);
    const ports = { port: Number(new URL(relay.url).port), grpcPort: Number(relay.linkAddress.split(":").pop()) };
    await relay.stop();
    await expect.poll(() => page.getByTestId("connection-banner").textContent(), { timeout: 20_000 }).toBe("The connection to the relay is lost. Reconnecting… What this page shows may be out of date.");
    expect(await page.getByTestId("connection-banner").getAttribute("role")).toBe("alert");
    await shot("connection-lost");
    // The same relay again (its database, its ports): the page's stream links again by itself, and the banner says so.
    relay = await startRelay(resolveRelayConfig({ flags: { dataDir, ...ports, grpcHost: "127.0.0.1", heartbeatIntervalMs: 500 } }), { log: silentLogger() });
    await expect.poll(() => page.getByTestId("connection-banner").textContent(), { timeout: 30_000 }).toBe("Connected to the relay again: this page is up to date.");
    await shot("connection-back");
    await expect.poll(() => page.getByTestId("connection-banner").count(), { timeout: 15_000 }).toBe(0);
  });

  it("follows the system's dark theme or the one chosen, and is used from the keyboard alone", async () => {
    const background = () => page.evaluate("getComputedStyle(document.documentElement).backgroundColor");
    const lightBackground = "rgb(246, 247, 249)";
    const darkBackground = "rgb(11, 17, 32)";
    await page.setViewportSize({ width: 1280, height: 860 });
    // The system asks for dark: every page follows, its text still readable (axe checks the contrast of each).
    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${relay.url}/`);
    await page.getByTestId("stat-machines").waitFor();
    expect(await background()).toBe(darkBackground);
    await shot("dark-overview");
    for (const [label, ready, name] of [
      ["Machines", () => page.getByRole("table", { name: "Machines" }).waitFor(), "dark-machines"],
      ["API keys", () => page.getByRole("table", { name: "API keys" }).waitFor(), "dark-keys"],
      ["Requests", () => page.getByRole("table", { name: "Requests" }).waitFor(), "dark-requests"],
      ["Usage", () => page.getByRole("heading", { name: "Requests" }).waitFor(), "dark-usage"],
      ["Forge", () => page.getByTestId("compatibility").waitFor(), "dark-forge"],
    ] as const) {
      await nav(label);
      await ready();
      await shot(name);
    }
    await nav("Stacks");
    await page.getByRole("link", { name: "tiny", exact: true }).click();
    await page.getByRole("heading", { name: "Playground" }).waitFor();
    await shot("dark-stack");

    // The snippets' tabs: one stop of the Tab key, arrows and Home/End move between them and choose.
    const curl = page.getByRole("tab", { name: "curl" });
    const tabStops = (list: string) => page.getByRole("tablist", { name: list }).getByRole("tab").evaluateAll((tabs) => tabs.map((t) => (t as unknown as { tabIndex: number }).tabIndex));
    expect(await tabStops("Language")).toEqual([0, -1, -1]);
    expect(await tabStops("API")).toEqual([0, -1, -1, -1]);
    await curl.focus();
    await page.keyboard.press("ArrowRight");
    await expect.poll(() => page.getByRole("tab", { name: "Python" }).getAttribute("aria-selected")).toBe("true");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Python");
    expect(await page.getByRole("tabpanel", { name: "Python" }).textContent()).toContain("import os");
    await page.keyboard.press("End");
    await expect.poll(() => page.getByRole("tab", { name: "JavaScript" }).getAttribute("aria-selected")).toBe("true");
    await page.keyboard.press("ArrowRight");
    await expect.poll(() => curl.getAttribute("aria-selected")).toBe("true");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("curl");

    // A person's own choice wins over the system's, and stays in this browser.
    await page.getByLabel("Colour theme").selectOption({ label: "Light" });
    await expect.poll(background).toBe(lightBackground);
    await page.reload();
    await page.getByRole("heading", { name: "Playground" }).waitFor();
    expect(await background()).toBe(lightBackground);
    await page.emulateMedia({ colorScheme: "light" });
    await page.getByLabel("Colour theme").selectOption({ label: "Dark" });
    await expect.poll(background).toBe(darkBackground);
    await page.getByLabel("Colour theme").selectOption({ label: "System theme" });
    await expect.poll(background).toBe(lightBackground);

    // The first stop of the keyboard skips the navigation: Enter lands on the page's content.
    await page.goto(`${relay.url}/keys`);
    await page.getByRole("table", { name: "API keys" }).waitFor();
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Skip to content");
    await shot("skip-link");
    await page.keyboard.press("Enter");
    expect(await page.evaluate("document.activeElement.id")).toBe("content");
    // The next Tab goes to the page itself, not back into the navigation.
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.getElementById('content').contains(document.activeElement)")).toBe(true);

    // Signing out forgets the playground keys this browser kept: the next person at it does not chat with them.
    const playgroundKeysKept = () => page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('makina.playground-key.')).length");
    expect(await playgroundKeysKept()).toBe(1);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Login").waitFor();
    expect(await playgroundKeysKept()).toBe(0);
  });

  it("has no serious accessibility violation on any page it visited (axe-core, WCAG 2.1 A and AA)", () => {
    // Kept beside the screenshots, for a person to read when this fails.
    writeFileSync(join(SHOTS, "..", "a11y-violations.json"), JSON.stringify(violations, null, 2));
    expect(violations).toEqual([]);
  });
});
